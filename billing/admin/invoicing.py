"""Django admin for invoices: they only move through the actions (recompute drafts, issue,
mark paid, void with a reason). An invoice is never edited here, and an issued one never changes.
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from core.admin_filters import RelatedByNameListFilter
from core.choices import admin_badge
from core.errors import DomainError

from ..models import CreditNote, Invoice, InvoiceLine, Payment
from ..selectors.issuing import confirmation_name, issue_previews
from ..services import invoicing
from ..templatetags.billing_tags import decimal_shown, quantity_shown

# --- invoices ---------------------------------------------------------------------------------


def _refusal(error: Exception) -> str:
    return " ".join(error.messages) if isinstance(error, ValidationError) else str(error)


class PeriodFilter(admin.SimpleListFilter):
    title = "period"
    parameter_name = "period"

    def lookups(self, request, model_admin):
        months = Invoice.objects.dates("period_start", "month", order="DESC")[:24]
        return [(f"{month:%Y-%m}", f"{month:%B %Y}") for month in months]

    def queryset(self, request, queryset):
        value = self.value() or ""
        year, _, month = value.partition("-")
        if year.isdigit() and month.isdigit():
            return queryset.filter(period_start__year=int(year), period_start__month=int(month))
        return queryset


class InvoiceLineInline(admin.TabularInline):
    model = InvoiceLine
    fields = [
        "position", "kind", "description", "period_start", "period_end", "hours",
        "quantity_as_shown", "unit", "price", "amount", "credited_events",
    ]
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["position"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="hours")
    def hours(self, line: InvoiceLine) -> str:
        return quantity_shown(line.quantity_hours)

    @admin.display(description="quantity")
    def quantity_as_shown(self, line: InvoiceLine) -> str:
        return quantity_shown(line.quantity)

    @admin.display(description="unit price")
    def price(self, line: InvoiceLine) -> str:
        return decimal_shown(line.unit_price)

    @admin.display(description="events")
    def credited_events(self, line: InvoiceLine) -> str:
        return "; ".join(
            f"#{event['id']} {event['hostname']} {event['kind']} from {event['opened_at']}"
            for event in line.events
        )


class CreditNoteInline(admin.TabularInline):
    model = CreditNote
    fields = ["number", "amount", "reason", "issue_date", "created_by"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class PaymentInline(CreditNoteInline):
    model = Payment
    fields = ["amount", "date", "reference", "recorded_by", "created_at"]
    readonly_fields = fields


class MarkPaidForm(forms.Form):
    reference = forms.CharField(
        label="Payment reference", max_length=100, required=False,
        help_text="The bank's or the ledger's reference, if any.",
    )


class DraftMonthForm(forms.Form):
    month = forms.DateField(
        label="Month", input_formats=["%Y-%m"], widget=forms.DateInput(attrs={"type": "month"}),
        help_text="Drafts (or recomputes) the invoice of every tenant with usage in that month.",
    )

    @staticmethod
    def last_month() -> str:
        return f"{timezone.localdate().replace(day=1) - timedelta(days=1):%Y-%m}"


class IssueConfirmForm(forms.Form):
    """What the confirmation named (the numbers and totals): issued only if still true."""

    confirm = forms.CharField(widget=forms.HiddenInput)


class VoidForm(forms.Form):
    reason = forms.CharField(
        label="Reason", max_length=500, widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Why these invoices are void: kept on each of them and in the audit log.",
    )


@admin.register(Invoice)
class InvoiceAdmin(admin.ModelAdmin):
    list_display = [
        "__str__", "tenant_name", "cost_center", "period", "status_badge", "total_shown",
        "issue_date", "due_date",
    ]
    list_display_links = ["__str__"]
    list_filter = ["status", PeriodFilter, ("tenant", RelatedByNameListFilter)]
    search_fields = ["number", "tenant_name", "tenant__slug", "cost_center"]
    list_select_related = ["tenant"]
    ordering = ["-period_start", "tenant_name", "-id"]
    inlines = [InvoiceLineInline, CreditNoteInline, PaymentInline]
    actions = ["recompute_drafts", "issue_selected", "mark_paid", "void_selected"]
    list_per_page = 100
    fieldsets = [
        (None, {"fields": ["number", "status", "tenant", "tenant_name", "cost_center",
                           "period_start", "period_end", "currency"]}),
        ("Totals", {"fields": ["subtotal", "discount_percent", "discount", "tax_percent", "tax",
                               "total", "credited", "amount_paid", "balance",
                               "unpriced_usage", "computed_at"]}),
        ("Lifecycle", {"fields": ["issue_date", "due_date", "issued_at", "issued_by",
                                  "paid_at", "paid_by", "payment_reference", "voided_at",
                                  "voided_by", "void_reason"]}),
    ]
    readonly_fields = [
        "number", "status", "tenant", "tenant_name", "cost_center", "period_start",
        "period_end", "currency", "subtotal", "discount_percent", "discount", "tax_percent",
        "tax", "total", "credited", "amount_paid", "balance", "unpriced_usage", "computed_at",
        "issue_date", "due_date",
        "issued_at", "issued_by", "paid_at", "paid_by", "payment_reference", "voided_at",
        "voided_by", "void_reason",
    ]

    def has_add_permission(self, request) -> bool:
        return False  # drafts come from the month-end task and "Draft a month's invoices"

    def get_urls(self):
        draft_month = self.admin_site.admin_view(self.draft_month_view)
        return [
            path("draft-month/", draft_month, name="billing_invoice_draft_month"),
            *super().get_urls(),
        ]

    def draft_month_view(self, request):
        """Draft every tenant's invoice for a month that has ended (the month-end task's work,
        on demand)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = DraftMonthForm(
            request.POST if request.method == "POST" else None,
            initial={"month": DraftMonthForm.last_month()},
        )
        if request.method == "POST" and form.is_valid():
            month = form.cleaned_data["month"]
            try:
                drafts = invoicing.invoices_draft_month(month=month, actor=request.user)
            except DomainError as error:
                form.add_error("month", str(error))
            else:
                self.message_user(
                    request, f"Drafted {len(drafts)} invoice(s) for {month:%B %Y}."
                )
                changelist = reverse("admin:billing_invoice_changelist")
                return HttpResponseRedirect(f"{changelist}?period={month:%Y-%m}")
        return TemplateResponse(
            request,
            "admin/billing/invoice/draft_month.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Draft a month's invoices",
                "form": form,
            },
        )

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # never edited: drafts are recomputed, issued ones never change

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # an invoice stays on record; a wrong one is voided

    def save_model(self, request, obj, form, change):
        raise PermissionDenied("Invoices change only through their actions.")

    def save_formset(self, request, form, formset, change):
        raise PermissionDenied("Invoice lines never change here.")

    @admin.display(description="period", ordering="period_start")
    def period(self, invoice: Invoice) -> str:
        return f"{invoice.period_start:%Y-%m}"

    @admin.display(description="status", ordering="status")
    def status_badge(self, invoice: Invoice) -> str:
        return admin_badge(
            value=invoice.status, label=invoice.get_status_display(), color=invoice.status_color
        )

    @admin.display(description="total", ordering="total")
    def total_shown(self, invoice: Invoice) -> str:
        return f"{invoice.total} {invoice.currency}"

    @admin.display(description="credited")
    def credited(self, invoice: Invoice) -> str:
        total = invoice.amount_credited
        return f"{total} {invoice.currency}" if total else "—"

    @admin.display(description="balance due")
    def balance(self, invoice: Invoice) -> str:
        due = invoice.balance_due
        flag = " (over-settled: refund owed)" if due < 0 else ""
        return f"{due} {invoice.currency}{flag}"

    @admin.display(description="unpriced usage (not billed)")
    def unpriced_usage(self, invoice: Invoice) -> str:
        if not invoice.unpriced:
            return "—"
        return format_html(
            "<br>".join(["{}"] * len(invoice.unpriced)),
            *(
                f"{item['resource']}: {item['quantity_hours']} h, {item['reason']}"
                for item in invoice.unpriced
            ),
        )

    # -- actions --

    def _report(self, request, done: list[Invoice], errors: dict[int, str], verb: str) -> None:
        if done:
            names = ", ".join(str(invoice) for invoice in done)
            self.message_user(request, f"{verb} {len(done)} invoice(s): {names}.")
        for invoice_id, error in errors.items():
            self.message_user(request, f"Invoice {invoice_id}: {error}", messages.ERROR)

    def _each(self, request, queryset: QuerySet[Invoice], service, verb: str, **kwargs) -> None:
        done, errors = [], {}
        for invoice in queryset.order_by("period_start", "tenant_name", "pk"):
            try:
                done.append(service(invoice_id=invoice.pk, actor=request.user, **kwargs))
            except (DomainError, ValidationError) as error:
                errors[invoice.pk] = _refusal(error)
        self._report(request, done, errors, verb)

    @admin.action(description="Recompute selected drafts from the current usage and rates")
    def recompute_drafts(self, request, queryset: QuerySet[Invoice]):
        done, errors = [], {}
        for invoice in queryset.select_related("tenant").order_by("period_start", "pk"):
            if not invoice.is_draft:
                errors[invoice.pk] = f"{invoice} is {invoice.status}: it never changes."
                continue
            try:
                done.append(
                    invoicing.invoice_compute(
                        tenant=invoice.tenant, month=invoice.period_start.date(),
                        actor=request.user,
                    )
                )
            except DomainError as error:
                errors[invoice.pk] = str(error)
        self._report(request, done, errors, "Recomputed")

    @admin.action(description="Issue selected drafts (asks first: they never change again)")
    def issue_selected(self, request, queryset: QuerySet[Invoice]):
        invoices = list(queryset)
        previews = issue_previews(invoices=invoices)
        name = confirmation_name(previews)
        form = IssueConfirmForm(request.POST if "apply" in request.POST else None,
                                initial={"confirm": name})
        confirmed = "apply" in request.POST and form.is_valid()
        # No draft among them: nothing to ask, each refusal is reported.
        if not previews or (confirmed and form.cleaned_data["confirm"] == name):
            issued, errors = invoicing.invoices_issue(
                invoice_ids=[invoice.pk for invoice in invoices], actor=request.user,
                expected_totals={preview.invoice_id: preview.total for preview in previews},
            )
            self._report(request, issued, errors, "Issued")
            return None
        if confirmed:
            form = IssueConfirmForm(initial={"confirm": name})
            self.message_user(request, "Numbers or totals changed since you were asked: "
                              "look again and confirm.", messages.WARNING)
        response = self._intermediate(
            request, queryset, form=form, action="issue_selected",
            title=f"Issue {len(previews)} invoice(s)?", button=f"Issue {len(previews)}",
        )
        response.template_name = "admin/billing/invoice/issue_form.html"
        response.context_data |= {"previews": previews,
                                  "skipped": len(invoices) - len(previews)}
        return response

    def _intermediate(self, request, queryset, *, form, action: str, title: str, button: str):
        return TemplateResponse(
            request,
            "admin/billing/invoice/action_form.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": title,
                "queryset": queryset.order_by("period_start", "tenant_name"),
                "form": form,
                "action": action,
                "button": button,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            },
        )

    @admin.action(description="Mark selected invoices paid: a payment of each one's balance "
                  "due (asks for a payment reference)")
    def mark_paid(self, request, queryset: QuerySet[Invoice]):
        form = MarkPaidForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            self._each(
                request, queryset, invoicing.invoice_mark_paid, "Marked paid",
                reference=form.cleaned_data["reference"], paid_at=timezone.now(),
            )
            return None
        return self._intermediate(
            request, queryset, form=form, action="mark_paid",
            title="Mark invoices paid", button="Mark them paid",
        )

    @admin.action(description="Void selected invoices (asks for a reason)")
    def void_selected(self, request, queryset: QuerySet[Invoice]):
        form = VoidForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            self._each(
                request, queryset, invoicing.invoice_void, "Voided",
                reason=form.cleaned_data["reason"],
            )
            return None
        return self._intermediate(
            request, queryset, form=form, action="void_selected",
            title="Void invoices", button="Void them",
        )
