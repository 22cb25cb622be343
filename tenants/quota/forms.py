"""Forms of the quota pages and the admin review page; the rules live in `quota.rules`."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone

from core.validators import column_max, validate_readable_text
from inventory import resource_classes

from . import rules as quota_rules
from .models import QuotaRequest, QuotaRequestLine


class QuotaRequestForm(forms.Form):
    justification = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "class": "form-control"}),
        max_length=quota_rules.MAX_JUSTIFICATION,
        validators=[validate_readable_text],
        help_text="What the quota is for, and why now: the platform team decides on it.",
    )
    ends_on = forms.DateField(
        required=False,
        label="Until (optional)",
        widget=forms.DateInput(attrs={"type": "date", "class": "form-control"}),
        help_text="For a temporary grant: the last day. The quota goes back down afterwards.",
    )

    cluster = forms.ChoiceField(
        required=False,
        label="Where",
        choices=lambda: [
            ("", "Any cluster"),
            *((slug, slug) for slug in quota_rules.clusters_offered()),
        ],
        help_text="A cluster of the fleet, or any: quota granted anywhere follows your "
                  "workloads to whichever cluster they run on.",
    )

    def clean_cluster(self) -> str | None:
        return self.cleaned_data.get("cluster") or None

    def clean_justification(self) -> str:
        value = self.cleaned_data["justification"].strip()
        if not value:
            raise ValidationError("Say what the quota is for.")
        return value

    def clean_ends_on(self):
        ends_on = self.cleaned_data.get("ends_on")
        quota_rules.check_ends_on(ends_on=ends_on, today=timezone.localdate())
        return ends_on


class QuotaRequestLineForm(forms.Form):
    resource = forms.CharField(required=False, widget=forms.Select(attrs={"class": "form-select"}))
    amount = forms.IntegerField(
        required=False,
        label="More",
        widget=forms.NumberInput(attrs={"class": "form-control", "min": 1, "step": 1}),
    )

    def __init__(self, *args, isolation: str = "shared", **kwargs):
        super().__init__(*args, **kwargs)
        self.isolation = isolation
        self.fields["resource"].widget.choices = quota_rules.requestable_choices(isolation)

    def clean(self):
        data = super().clean()
        resource, amount = data.get("resource") or "", data.get("amount")
        if not resource and amount is None:
            return data  # a blank row
        resource_class = None
        if not resource:
            self.add_error("resource", "Choose a resource.")
        else:
            try:
                resource_class = quota_rules.check_resource(
                    resource=resource, isolation=self.isolation
                )
            except ValidationError as exc:
                self.add_error("resource", exc)
        if "amount" not in self.errors:
            try:
                quota_rules.check_amount(amount=amount, resource_class=resource_class)
            except ValidationError as exc:
                self.add_error("amount", exc)
        return data


class BaseLineFormSet(forms.BaseFormSet):
    def lines(self) -> list[tuple[str, int]]:
        return [
            (form.cleaned_data["resource"], form.cleaned_data["amount"])
            for form in self.forms
            if form.cleaned_data.get("resource")
        ]

    def clean(self):
        if any(self.errors):
            return
        if not self.lines():
            raise ValidationError("Ask for at least one resource.")
        quota_rules.check_no_duplicates([resource for resource, _ in self.lines()])


QuotaRequestLineFormSet = forms.formset_factory(
    QuotaRequestLineForm,
    formset=BaseLineFormSet,
    extra=0,
    min_num=1,
    max_num=quota_rules.MAX_LINES,
    validate_max=True,
)


def lenient_lines(data) -> list[tuple[str, int]]:
    """The (resource, amount) pairs of a half-filled form that already make sense (previews)."""
    lines = []
    try:
        total = min(int(data.get("lines-TOTAL_FORMS", 0)), quota_rules.MAX_LINES)
    except (TypeError, ValueError):
        return []
    for i in range(total):
        resource = data.get(f"lines-{i}-resource", "")
        try:
            amount = int(data.get(f"lines-{i}-amount", ""))
            resource_classes.parse(resource)
        except (TypeError, ValueError):
            continue
        if amount > 0 and resource not in {r for r, _ in lines}:
            lines.append((resource, amount))
    return lines


def line_initial(data) -> list[dict]:
    """The rows of a posted form, as initial data to redraw it (with one more blank row)."""
    try:
        total = min(int(data.get("lines-TOTAL_FORMS", 0)), quota_rules.MAX_LINES - 1)
    except (TypeError, ValueError):
        total = 0
    rows = [
        {"resource": data.get(f"lines-{i}-resource", ""), "amount": data.get(f"lines-{i}-amount")}
        for i in range(total)
    ]
    return [*rows, {}]


class QuotaDecisionForm(forms.Form):
    """The admin's decision on one request: amounts per line, a note or reason."""

    note = forms.CharField(
        required=False,
        label="Note / reason",
        validators=[validate_readable_text],
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Sent to the tenant. Required to reject.",
    )

    def __init__(self, *args, request: QuotaRequest, **kwargs):
        super().__init__(*args, **kwargs)
        self.lines = list(request.lines.all())
        for line in self.lines:
            self.fields[self.field_name(line)] = forms.IntegerField(
                min_value=0,
                max_value=column_max(QuotaRequestLine._meta.get_field("approved_amount")),
                initial=line.amount,
                label=line.resource_label,
                widget=forms.NumberInput(attrs={"style": "width:7em"}),
            )

    @staticmethod
    def field_name(line) -> str:
        return f"amount_{line.pk}"

    def amounts(self) -> dict[str, int]:
        return {line.resource: self.cleaned_data[self.field_name(line)] for line in self.lines}

    def amount_fields(self):
        return [(line, self[self.field_name(line)]) for line in self.lines]


class RejectForm(forms.Form):
    reason = forms.CharField(
        validators=[validate_readable_text],
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Sent to the requester and the tenant's owners.",
    )


class GpuLendingForm(forms.Form):
    """A dedicated tenant's owners choose whether its cohort may borrow its idle reserved GPUs."""

    lends_reserved_gpus = forms.BooleanField(
        required=False,
        label="Lend our idle reserved GPUs to the cohort",
        widget=forms.CheckboxInput(attrs={"class": "form-check-input"}),
    )
