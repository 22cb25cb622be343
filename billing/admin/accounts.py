"""Django admin for rate cards, billing accounts, credit notes and budget alerts.

Every write goes through a service: rates through `rate_save`/`rate_delete` (their checks shown
as form errors, also when the service's own check refuses a save that lost a race:
`core.admin_saves`), accounts through `billing_account_update`, credit notes through
`credit_note_create`. A credit note is never edited; budget alerts are only read.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied, ValidationError

from core.admin import ReadOnlyModelAdmin
from core.admin_saves import ServiceSaveAdmin
from core.errors import DomainError
from inventory import resource_classes

from ..models import BillingAccount, BudgetAlert, CreditNote, Invoice, Rate
from ..services import invoicing, rates
from ..services.accounts import billing_account_update

# --- rate cards -------------------------------------------------------------------------------


def _resource_choices() -> list[tuple[str, str]]:
    return [
        (key, f"{resource_classes.parse(key).label} ({key})") for key in resource_classes.all_keys()
    ]


class RateForm(forms.ModelForm):
    """The rate card's checks (overlaps, issued invoices) shown on the fields they concern."""

    resource = forms.TypedChoiceField(label="Resource class", choices=_resource_choices)

    class Meta:
        model = Rate
        fields = ["resource", "unit_price", "unit", "valid_from", "valid_to", "note"]

    def clean(self):
        cleaned = super().clean()
        if not self.errors:
            # The rate as it would be saved; the model's own checks then skip the fields that
            # the rate card's checks already refused (their messages say more).
            fields = {name: cleaned.get(name) for name in self.Meta.fields}
            candidate = Rate(pk=self.instance.pk, **fields)
            candidate._state.adding = self.instance._state.adding
            try:
                rates.rate_check(rate=candidate)
            except ValidationError as error:
                self._update_errors(error)
        return cleaned


@admin.register(Rate)
class RateAdmin(ServiceSaveAdmin):
    form = RateForm
    list_display = ["resource", "price", "unit", "valid_from", "valid_to", "note"]
    list_filter = ["resource", "unit"]
    search_fields = ["resource", "note"]
    ordering = ["resource", "valid_from"]
    date_hierarchy = "valid_from"

    @admin.display(description="unit price", ordering="unit_price")
    def price(self, obj: Rate) -> str:
        return obj.unit_price_shown

    def save_model(self, request, obj, form, change):
        rates.rate_save(actor=request.user, rate=obj)

    def delete_model(self, request, obj):
        rates.rate_delete(actor=request.user, rate_id=obj.pk)

    def delete_queryset(self, request, queryset):
        for rate in queryset:
            rates.rate_delete(actor=request.user, rate_id=rate.pk)


# --- billing accounts -------------------------------------------------------------------------


@admin.register(BillingAccount)
class BillingAccountAdmin(admin.ModelAdmin):
    list_display = ["tenant", "monthly_budget", "discount_percent", "updated_at"]
    search_fields = ["tenant__name", "tenant__slug"]
    list_select_related = ["tenant"]
    fields = ["tenant", "monthly_budget", "discount_percent"]

    def get_readonly_fields(self, request, obj=None):
        return ["tenant"] if obj else []

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a tenant's account lives as long as the tenant

    def save_model(self, request, obj, form, change):
        account = billing_account_update(
            actor=request.user,
            tenant=obj.tenant,
            monthly_budget=obj.monthly_budget,
            discount_percent=obj.discount_percent,
        )
        obj.pk = account.pk


# --- credit notes -----------------------------------------------------------------------------


class CreditNoteForm(forms.ModelForm):
    class Meta:
        model = CreditNote
        fields = ["invoice", "amount", "reason"]
        widgets = {"reason": forms.Textarea(attrs={"rows": 3, "cols": 60})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "invoice" in self.fields:  # the add form (a stored note is only viewed)
            self.fields["invoice"].queryset = Invoice.objects.filter(
                status__in=[Invoice.Status.ISSUED, Invoice.Status.PAID]
            ).order_by("-issue_date", "-number")
            self.fields["invoice"].help_text = "Only issued and paid invoices take a credit note."

    def clean(self):
        cleaned = super().clean()
        invoice, amount, reason = (cleaned.get(name) for name in ("invoice", "amount", "reason"))
        if invoice is not None and amount is not None and reason:
            try:
                invoicing.credit_note_check(invoice=invoice, amount=amount, reason=reason)
            except ValidationError as error:
                self._update_errors(error)
            except DomainError as error:
                self.add_error("invoice", str(error))
        return cleaned


@admin.register(CreditNote)
class CreditNoteAdmin(ServiceSaveAdmin):
    form = CreditNoteForm
    list_display = ["number", "invoice", "tenant", "amount", "issue_date", "created_by"]
    list_select_related = ["invoice", "created_by"]
    search_fields = ["number", "invoice__number", "invoice__tenant_name", "reason"]
    date_hierarchy = "issue_date"

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["invoice", "amount", "reason"]
        return ["number", "invoice", "amount", "reason", "issue_date", "created_by", "created_at"]

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj) if obj else []

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # a credit note is never edited: issue another

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="tenant", ordering="invoice__tenant_name")
    def tenant(self, note: CreditNote) -> str:
        return note.invoice.tenant_name

    def save_model(self, request, obj, form, change):
        if change:
            raise PermissionDenied("A credit note is never edited.")
        note = invoicing.credit_note_create(
            invoice_id=obj.invoice_id, actor=request.user, amount=obj.amount, reason=obj.reason
        )
        for field in ("pk", "number", "issue_date", "created_by_id", "created_at"):
            setattr(obj, field, getattr(note, field))


# --- budget alerts ----------------------------------------------------------------------------


@admin.register(BudgetAlert)
class BudgetAlertAdmin(ReadOnlyModelAdmin):
    list_display = ["tenant", "month", "threshold", "spent", "budget", "sent_at"]
    list_filter = ["threshold", "month"]
    search_fields = ["tenant__name", "tenant__slug"]
    list_select_related = ["tenant"]
