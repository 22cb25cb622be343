"""Forms of finance's invoice pages: what each action asks for, checked before a service runs."""

from decimal import Decimal
from typing import ClassVar

from django import forms
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from .filters import MonthField


class StyledForm(forms.Form):
    """Bootstrap's classes on every widget, and `is-invalid` on those with errors. `{{ form }}`
    writes its fields with their labels, help and errors (`_form_fields.html`).

    An unbound form of these classes renders the same every time (no initial value that
    changes, no choice read from the database: keep it so in subclasses), so its HTML is kept
    per process after the first time: an invoice's page offers three of them, and the
    widgets' templates were a tenth of the page's time. A bound form, or one given initial
    values, is rendered each time."""

    # Found by the project's template engine (the form renderer's knows only the apps' templates).
    fields_template = "billing/finance/_form_fields.html"
    _unbound_html: ClassVar[dict[tuple, SafeString]] = {}

    def render(self, template_name=None, context=None, renderer=None):
        if template_name or context or renderer:
            return super().render(template_name, context, renderer)
        if self.is_bound or self._errors or self.initial:
            return render_to_string(self.fields_template, {"form": self})
        key = (type(self), self.prefix, self.auto_id)
        html = self._unbound_html.get(key)
        if html is None:
            html = self._unbound_html[key] = render_to_string(self.fields_template, {"form": self})
        return html

    __str__ = render
    __html__ = render

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
    reference = forms.CharField(
        label="Payment reference", max_length=100, required=False,
        help_text="The bank transfer's reference, for instance.",
    )
    paid_on = forms.DateField(label="Paid on", required=False, help_text="Empty: today.",
                              widget=forms.DateInput(attrs={"type": "date"}))


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
