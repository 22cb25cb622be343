"""Forms of the fleet pages: lifecycle actions, validation results, retirement, import."""

from django import forms

from core.validators import validate_readable_text

from .models import NodeState, NodeValidation

ACTIONS = {
    "cordon": "Cordon",
    "uncordon": "Uncordon",
    "drain": "Drain",
    "stop-drain": "Stop draining",
    "return-to-service": "Return to service",
    "start-validation": "Start validation",
    "finish-validation": "Mark available",
    "fail-validation": "Send to maintenance",
    "revalidate": "Validate again",
    "retire": "Retire",
}

# What each action is in lifecycle terms: the state it moves to, from which states it is offered.
ACTION_MOVES: dict[str, tuple[str, tuple[str, ...]]] = {
    "cordon": (NodeState.CORDONED, (NodeState.AVAILABLE,)),
    "uncordon": (NodeState.AVAILABLE, (NodeState.CORDONED,)),
    "drain": (NodeState.DRAINING, (NodeState.AVAILABLE, NodeState.CORDONED)),
    "stop-drain": (NodeState.CORDONED, (NodeState.DRAINING,)),
    "return-to-service": (NodeState.AVAILABLE, (NodeState.MAINTENANCE,)),
    "start-validation": (NodeState.VALIDATING, (NodeState.DISCOVERED,)),
    "finish-validation": (NodeState.AVAILABLE, (NodeState.VALIDATING,)),
    "fail-validation": (NodeState.MAINTENANCE, (NodeState.VALIDATING,)),
    "revalidate": (NodeState.VALIDATING, (NodeState.MAINTENANCE,)),
    "retire": (NodeState.RETIRED, (NodeState.DISCOVERED, NodeState.MAINTENANCE)),
}


def actions_for(state: str) -> list[tuple[str, str]]:
    return [(key, ACTIONS[key]) for key, (_, sources) in ACTION_MOVES.items() if state in sources]


class NodeActionForm(forms.Form):
    action = forms.ChoiceField(choices=list(ACTIONS.items()))
    reason = forms.CharField(
        max_length=300,
        validators=[validate_readable_text],
        widget=forms.TextInput(attrs={"placeholder": "Why (recorded in the audit trail)"}),
    )


class ValidationResultForm(forms.Form):
    kind = forms.ChoiceField(choices=NodeValidation.Kind.choices)
    passed = forms.TypedChoiceField(
        choices=[("true", "Pass"), ("false", "Fail")], coerce=lambda v: v == "true"
    )
    summary = forms.CharField(max_length=500, required=False, validators=[validate_readable_text])


class RetirementRecordForm(forms.Form):
    disks_wiped = forms.BooleanField(required=False, label="Disks wiped")
    bmc_reset = forms.BooleanField(required=False, label="BMC reset to factory defaults")
    note = forms.CharField(max_length=200, required=False, validators=[validate_readable_text])


class EventResolveForm(forms.Form):
    note = forms.CharField(max_length=300, required=False, validators=[validate_readable_text])


class ImportForm(forms.Form):
    FORMATS = [("csv", "CSV"), ("json", "JSON")]
    OBJECTS = [("nodes", "Nodes"), ("gpus", "GPUs"), ("nics", "NICs")]

    format = forms.ChoiceField(choices=FORMATS, initial="csv")
    objects = forms.ChoiceField(
        choices=OBJECTS, initial="nodes", help_text="CSV only: what each row describes."
    )
    data = forms.CharField(widget=forms.Textarea(attrs={"rows": 10, "class": "font-monospace"}),
                           required=False)
    file = forms.FileField(required=False)
    dry_run = forms.BooleanField(required=False, initial=True, label="Preview only (dry run)")

    MAX_BYTES = 5 * 1024 * 1024

    def clean(self) -> dict:
        cleaned = super().clean()
        upload = cleaned.get("file")
        if upload is not None:
            if upload.size > self.MAX_BYTES:
                raise forms.ValidationError("The file is larger than 5 MB.")
            try:
                cleaned["data"] = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise forms.ValidationError("The file is not UTF-8 text.") from exc
        if not (cleaned.get("data") or "").strip():
            raise forms.ValidationError("Paste the data or choose a file.")
        return cleaned
