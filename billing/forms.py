"""Forms of finance's invoice pages: what each action asks for, checked before a service runs."""

from decimal import Decimal

from django import forms

from core.forms import FieldsFromTemplate

from .filters import MonthField


class StyledForm(FieldsFromTemplate, forms.Form):
    """Bootstrap's classes on every widget, and `is-invalid` on those with errors. `{{ form }}`
    writes its fields with their labels, help and errors (`_form_fields.html`)."""

    fields_template = "billing/finance/_form_fields.html"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.widget.attrs.setdefault("class", "form-control form-control-sm")

    def full_clean(self):
        super().full_clean()
        for name in self.errors:
            if name in self.fields:
                widget = self.fields[name].widget
                widget.attrs["class"] = widget.attrs.get("class", "") + " is-invalid"
                widget.attrs["aria-invalid"] = "true"

    def add_error(self, field, error):
        super().add_error(field, error)
        if field in self.fields:
            widget = self.fields[field].widget
            if "is-invalid" not in widget.attrs.get("class", ""):
                widget.attrs["class"] = widget.attrs.get("class", "") + " is-invalid"


class BulkIssueForm(forms.Form):
    invoice = forms.TypedMultipleChoiceField(
        coerce=int, choices=(), error_messages={"required": "Select the drafts to issue."}
    )

    def __init__(self, *args, draft_ids: list[int] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["invoice"].choices = [(pk, pk) for pk in draft_ids]


class DraftMonthForm(StyledForm):
    month = MonthField(required=False, help_text="Empty: last month.")


class PaymentForm(StyledForm):
    amount = forms.DecimalField(
        label="Amount received", max_digits=14, decimal_places=2, min_value=Decimal("0.01"),
        required=False,
        help_text="All or part of the balance due (shown above), never more. Empty: all of it.",
        error_messages={"min_value": "A payment is a positive amount."},
    )
    paid_on = forms.DateField(label="Paid on", required=False, help_text="Empty: today.",
                              widget=forms.DateInput(attrs={"type": "date"}))
    reference = forms.CharField(
        label="Payment reference", max_length=100, required=False,
        help_text="The bank transfer's reference, for instance.",
    )


class VoidForm(StyledForm):
    reason = forms.CharField(
        label="Why void it?", max_length=500, strip=True,
        error_messages={"required": "Say why the invoice is void: it is kept, with the reason."},
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class CreditNoteForm(StyledForm):
    amount = forms.DecimalField(
        label="Amount", max_digits=14, decimal_places=2, min_value=Decimal("0.01"),
        error_messages={"min_value": "A credit note credits a positive amount."},
    )
    reason = forms.CharField(
        label="Reason", max_length=500, strip=True,
        error_messages={"required": "Say what the credit corrects."},
        widget=forms.Textarea(attrs={"rows": 2}),
    )
