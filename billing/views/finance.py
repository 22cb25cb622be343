"""Finance's invoice pages: the list (filters, totals, sorting, bulk issue, drafting a month,
exports) and one invoice (its lines, credits, trail, the moves its state allows, downloads).
Finance and platform admins only: anyone else gets 403.

Refusals raised by the services (an illegal move, a month not yet ended) become messages on
the page the person came from, in one place: core.middleware.DomainErrorMiddleware.
"""

from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.confirmation import confirmation_page, is_confirmed

from ..documents import last_day
from ..downloads import CONTENT_TYPES, invoice_file, invoices_file
from ..filters import InvoiceFilterSet, filter_errors
from ..forms import BulkIssueForm, CreditNoteForm, DraftMonthForm, PaymentForm, VoidForm
from ..models import Invoice, InvoiceLine, InvoiceStatus
from ..selectors.finance import (
    invoice_audit_trail,
    invoice_filter_choices,
    invoice_for_detail,
    invoice_list_totals,
    invoice_row_values,
    invoice_rows_for_list,
    invoices_for_list,
)
from ..selectors.invoices import invoice_for_download
from ..selectors.issuing import IssuePreview, confirmation_name, issue_previews
from ..selectors.metering_gaps import describe_spans, unmetered_spans
from ..selectors.tenant_filter import tenant_choice
from ..services import invoice_exports, invoicing, payments
from ..services.exports import invoices_export_record
from .access import finance_required

PAGE_SIZE = 50
# `?page_size=` may ask for more rows, up to this many (a page, not the whole ledger: the
# exports are for that).
MAX_PAGE_SIZE = 500
# Which moves each state offers on the detail page (the services refuse the rest anyway).
ACTIONS_BY_STATUS = {
    InvoiceStatus.DRAFT: ("recompute", "issue"),
    InvoiceStatus.ISSUED: ("pay", "void", "credit"),
    InvoiceStatus.PAID: ("credit",),
    InvoiceStatus.VOID: (),
}


NOT_UNDONE = ("Issuing cannot be undone: an issued invoice never changes again; a mistake is "
              "corrected with a credit note, or by voiding it (it stays on record).")

# The list's exports: (format, label, icon).
EXPORT_FORMATS = (
    ("csv", "CSV", "bi-filetype-csv"),
    ("xlsx", "XLSX", "bi-file-earmark-spreadsheet"),
)

# The list's sortable columns: (sort key of InvoiceFilterSet, heading, alignment).
COLUMNS = (
    ("number", "Invoice", ""),
    ("tenant", "Tenant", ""),
    ("cost_center", "Cost center", ""),
    ("period", "Period", ""),
    ("status", "Status", ""),
    ("issue_date", "Issued", ""),
    ("due_date", "Due", ""),
    ("subtotal", "Subtotal", "end"),
    ("total", "Total", "end"),
)


def _filtered(request) -> tuple[InvoiceFilterSet, list[str], QuerySet[Invoice]]:
    filters = InvoiceFilterSet(request.GET, queryset=invoices_for_list(user=request.user))
    errors = filter_errors(filters, request.GET, ignore=("page", "page_size"))
    # A filter that cannot be applied shows (and exports) nothing rather than everything.
    return filters, errors, filters.qs.none() if errors else filters.qs


def page_size(request) -> int:
    """Rows per page: `?page_size=` between 1 and MAX_PAGE_SIZE, else the default."""
    try:
        size = int(request.GET.get("page_size", PAGE_SIZE))
    except ValueError:
        return PAGE_SIZE
    return min(max(size, 1), MAX_PAGE_SIZE)


def query_without(request, *names: str) -> str:
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    return query.urlencode()


def _columns(sort: str, sort_query: str) -> list[dict]:
    """Each heading links to the list sorted by it, ascending first, then descending."""
    prefix = f"?{sort_query}&" if sort_query else "?"
    columns = []
    for key, label, align in COLUMNS:
        current = "asc" if sort == key else "desc" if sort == f"-{key}" else ""
        target = f"-{key}" if current == "asc" else key
        columns.append({"key": key, "label": label, "align": align, "current": current,
                        "url": f"{prefix}sort={target}"})
    return columns


def _back_to_list(request) -> str:
    back = request.POST.get("next", "")
    if back.startswith("/") and url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}
    ):
        return back
    return reverse("billing:invoices")


@require_GET
@finance_required
def invoice_list(request):
    filters, errors, invoices = _filtered(request)
    # What a row shows, and no more (not the tenant's or the issuer's whole row).
    rows = invoice_rows_for_list(invoices)
    totals = invoice_list_totals(user=request.user, invoices=invoices,
                                 filters=None if errors else filters.form.cleaned_data)
    paginator = Paginator(rows, page_size(request))
    # The totals counted the same rows: the paginator need not count them again.
    paginator.count = totals.count
    page = paginator.get_page(request.GET.get("page"))
    # Each row links to its invoice: the prefix reversed once, not once per row.
    detail_prefix = reverse("billing:invoices")
    sort = request.GET.get("sort", "")
    context = {
        "filters": filters,
        "filter_errors": errors,
        "page": page,
        "rows": [invoice_row_values(invoice) for invoice in page.object_list],
        "detail_prefix": detail_prefix,
        "totals": totals,
        "choices": invoice_filter_choices(user=request.user),
        # The tenant is a slug typed in, not a select of every tenant (thousands of them).
        "tenant_choice": tenant_choice(request.GET.get("tenant")),
        "tenant_query": query_without(request, "page", "tenant"),
        "statuses": InvoiceStatus.choices,
        "selected_statuses": request.GET.getlist("status"),
        "query": query_without(request, "page"),
        "columns": _columns(sort, query_without(request, "page", "sort")),
        "export_query": query_without(request, "page", "sort"),
        "last_month": _last_month(),
        "full_path": request.get_full_path(),
        "currency": settings.BILLING_CURRENCY,
        # Longer lists are written in the background: their export buttons ask for that.
        "export_buttons": [
            (fmt, label, icon, invoice_exports.is_inline(fmt=fmt, invoice_count=totals.count))
            for fmt, label, icon in EXPORT_FORMATS
        ],
    }
    if request.htmx:
        # htmx swaps only a 2xx answer: the table with the filter's errors is that answer.
        return render(request, "billing/finance/invoices.html#invoice-table", context)
    return render(request, "billing/finance/invoices.html", context,
                  status=400 if errors else 200)


def _last_month() -> date:
    first = timezone.now().date().replace(day=1)
    return (first - timedelta(days=1)).replace(day=1)


@require_POST
@finance_required
def invoices_issue_bulk(request):
    posted = request.POST.getlist("invoice")
    draft_ids = [int(pk) for pk in posted if pk.isascii() and pk.isdigit()]
    form = BulkIssueForm(request.POST, draft_ids=draft_ids)
    if not form.is_valid():
        messages.error(request, "Select the drafts to issue.")
        return redirect(_back_to_list(request))
    ids = form.cleaned_data["invoice"]
    previews = issue_previews(invoices=invoices_for_list(user=request.user).filter(pk__in=ids))
    if previews and not is_confirmed(request, name=confirmation_name(previews)):
        return _bulk_issue_confirmation(request, previews)
    issued, errors = invoicing.invoices_issue(
        invoice_ids=ids, actor=request.user,
        expected_totals={preview.invoice_id: preview.total for preview in previews},
    )
    if issued:
        numbers = ", ".join(invoice.number for invoice in issued)
        messages.success(request, f"Issued {len(issued)} invoice(s): {numbers}.")
    labels = dict(
        Invoice.objects.filter(pk__in=list(errors)).values_list("pk", "tenant_name")
    )
    for invoice_id, error in sorted(errors.items()):
        name = labels.get(invoice_id, f"invoice {invoice_id}")
        messages.error(request, f"Not issued, {name} (#{invoice_id}): {error}")
    return redirect(_back_to_list(request))


def _bulk_issue_confirmation(request, previews: list[IssuePreview]) -> HttpResponse:
    total = sum(preview.total for preview in previews)
    currency = previews[0].currency
    unmetered = [preview for preview in previews if preview.unmetered]
    consequences = [str(preview) for preview in previews]
    if unmetered:
        consequences.append(
            f"{len(unmetered)} of them cover hours never metered and will not be issued: "
            "issue each from its own page once metered, or there with a reason."
        )
    consequences.append(NOT_UNDONE)
    count = len(previews)
    return confirmation_page(
        request, name=confirmation_name(previews),
        title=f"Issue {count} invoice{pluralize(count)} for {total:,.2f} {currency}?",
        consequences=consequences, submit_label=f"Issue {count} invoice{pluralize(count)}",
        cancel_url=_back_to_list(request), keep=("invoice", "next"), danger=False,
    )


@require_POST
@finance_required
def invoices_draft_month(request):
    form = DraftMonthForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(form.errors.get("month", [])))
        return redirect(_back_to_list(request))
    month = form.cleaned_data["month"] or _last_month()
    drafts = invoicing.invoices_draft_month(month=month, actor=request.user)
    messages.success(
        request,
        f"{len(drafts)} draft invoice(s) for {month:%B %Y} computed: review and issue them.",
    )
    return redirect(reverse("billing:invoices") + f"?period={month:%Y-%m}&status=draft")


def _events_of(line: InvoiceLine) -> list[dict]:
    return [event for event in (line.events or []) if isinstance(event, dict)]


def _trail(invoice: Invoice) -> tuple[list, int]:
    """The invoice's audit events, and how many earlier downloads are not shown."""
    trail = invoice_audit_trail(invoice=invoice)
    return list(trail.events), trail.earlier_downloads


def _detail_context(request, invoice: Invoice, **forms) -> dict:
    rows = []
    for line in invoice.lines.all():
        row = {"line": line, "last_day": last_day(line.period_end)}
        if line.kind != InvoiceLine.Kind.USAGE:
            row["events"] = _events_of(line)
        rows.append(row)
    trail, earlier_downloads = _trail(invoice)
    # As the user's get_full_name() gives it, else the username (invoice_for_detail's names).
    full_name = f"{invoice.issued_by_first_name or ''} {invoice.issued_by_last_name or ''}"
    return {
        "invoice": invoice,
        "issued_by_name": full_name.strip() or invoice.issued_by_username,
        "period_last_day": last_day(invoice.period_end),
        "usage_lines": [row for row in rows if row["line"].kind == InvoiceLine.Kind.USAGE],
        "credit_lines": [row for row in rows if row["line"].kind == InvoiceLine.Kind.CREDIT],
        "unpriced": [item for item in (invoice.unpriced or []) if isinstance(item, dict)],
        "credit_notes": list(invoice.credit_notes.all()),
        "payments": list(invoice.payments.all()),
        "trail": trail,
        "earlier_downloads": earlier_downloads,
        "actions": ACTIONS_BY_STATUS.get(invoice.status, ()),
        "unmetered": unmetered_spans(start=invoice.period_start, end=invoice.period_end),
        "payment_form": forms.get("payment_form") or PaymentForm(),
        "void_form": forms.get("void_form") or VoidForm(),
        "credit_form": forms.get("credit_form") or CreditNoteForm(),
        "open_form": forms.get("open_form", ""),
    }


@require_GET
@finance_required
def invoice_detail(request, invoice_id: int):
    invoice = invoice_for_detail(user=request.user, invoice_id=invoice_id)
    return render(request, "billing/finance/invoice_detail.html", _detail_context(request, invoice))


def _invoice(request, invoice_id: int) -> Invoice:
    return invoice_for_detail(user=request.user, invoice_id=invoice_id)


def _to_detail(invoice: Invoice):
    return redirect("billing:invoice-detail", invoice_id=invoice.pk)


def _put_on_form(form, error: ValidationError, *, renamed: dict[str, str] | None = None) -> None:
    """A service's field errors on the page's form (its names may differ from the form's)."""
    if not hasattr(error, "error_dict"):
        form.add_error(None, error.messages)
        return
    for name, messages_ in error.message_dict.items():
        name = (renamed or {}).get(name, name)
        form.add_error(name if name in form.fields else None, messages_)


def _form_refused(request, invoice: Invoice, name: str, form) -> HttpResponse:
    invoice = invoice_for_detail(user=request.user, invoice_id=invoice.pk)
    context = _detail_context(request, invoice, **{name: form, "open_form": name})
    return render(request, "billing/finance/invoice_detail.html", context, status=400)


@require_POST
@finance_required
def invoice_recompute(request, invoice_id: int):
    invoice = _invoice(request, invoice_id)
    month = invoice.period_start.astimezone(UTC).date()
    invoicing.invoice_compute(tenant=invoice.tenant, month=month, actor=request.user)
    messages.success(request, f"Draft for {invoice.tenant_name}, {invoice.month_label} recomputed.")
    return _to_detail(invoice)


def _issue_confirmation(request, preview: IssuePreview, *, reason: str) -> HttpResponse:
    consequences = [
        f"{preview.tenant_name} is billed {preview.total:,.2f} {preview.currency} for "
        f"{preview.month_label}, as invoice {preview.number}, dated today and due in "
        f"{settings.BILLING_PAYMENT_TERMS_DAYS} days.",
    ]
    if preview.unmetered:
        consequences.append(
            f"{preview.unmetered_hours} hour(s) of {preview.month_label} were never metered "
            f"({describe_spans(preview.unmetered)}): it is issued without them, because "
            f"“{reason}” (kept in its audit trail)."
        )
    consequences.append(NOT_UNDONE)
    return confirmation_page(
        request, name=confirmation_name([preview]),
        title=f"Issue {preview.number} to {preview.tenant_name} for "
              f"{preview.total:,.2f} {preview.currency}?",
        consequences=consequences, submit_label=f"Issue {preview.number}",
        cancel_url=reverse("billing:invoice-detail", args=[preview.invoice_id]),
        keep=("unmetered_reason",), danger=False,
    )


@require_POST
@finance_required
def invoice_issue(request, invoice_id: int):
    invoice = _invoice(request, invoice_id)
    reason = request.POST.get("unmetered_reason", "").strip()
    previews = issue_previews(invoices=[invoice])
    preview = previews[0] if previews else None
    # Not a draft: the service says why. Unmetered hours without a reason: it refuses them.
    asks = preview is not None and (reason or not preview.unmetered)
    if asks and not is_confirmed(request, name=confirmation_name(previews)):
        return _issue_confirmation(request, preview, reason=reason)
    try:
        issued = invoicing.invoice_issue(
            invoice_id=invoice.pk, actor=request.user, unmetered_reason=reason,
            expected_total=preview.total if preview else None,
        )
    except ValidationError as error:
        messages.error(request, f"{invoice} was not issued: {' '.join(error.messages)}")
        return _to_detail(invoice)
    messages.success(request, f"Issued {issued.number}, due {issued.due_date:%Y-%m-%d}.")
    return _to_detail(invoice)


@require_POST
@finance_required
def invoice_pay(request, invoice_id: int):
    invoice = _invoice(request, invoice_id)
    form = PaymentForm(request.POST)
    if not form.is_valid():
        return _form_refused(request, invoice, "payment_form", form)
    paid_on = form.cleaned_data["paid_on"]
    if paid_on is not None and paid_on > timezone.localdate():
        form.add_error("paid_on", "A payment cannot be recorded in the future.")
        return _form_refused(request, invoice, "payment_form", form)
    try:
        if form.cleaned_data["amount"] is None:  # the whole balance due
            paid_at = None
            if paid_on is not None and paid_on != timezone.localdate():
                paid_at = datetime.combine(paid_on, time(12), tzinfo=UTC)
            paid = invoicing.invoice_mark_paid(invoice_id=invoice.pk, actor=request.user,
                                               paid_at=paid_at,
                                               reference=form.cleaned_data["reference"])
            messages.success(request, f"{invoice} marked paid.")
            return _to_detail(paid)
        payment = payments.payment_record(
            invoice_id=invoice.pk, actor=request.user, amount=form.cleaned_data["amount"],
            paid_on=paid_on, reference=form.cleaned_data["reference"],
        )
    except ValidationError as error:
        _put_on_form(form, error, renamed={"paid_at": "paid_on"})
        return _form_refused(request, invoice, "payment_form", form)
    paid = payment.invoice
    if paid.status == InvoiceStatus.PAID:
        outcome = "it is paid"
    else:
        outcome = f"{paid.currency} {paid.balance_due:,.2f} is still due"
    messages.success(request, f"Payment of {paid.currency} {payment.amount:,.2f} recorded on "
                              f"{invoice}: {outcome}.")
    return _to_detail(invoice)


@require_POST
@finance_required
def invoice_void(request, invoice_id: int):
    invoice = _invoice(request, invoice_id)
    form = VoidForm(request.POST)
    if not form.is_valid():
        return _form_refused(request, invoice, "void_form", form)
    try:
        invoicing.invoice_void(invoice_id=invoice.pk, actor=request.user,
                               reason=form.cleaned_data["reason"])
    except ValidationError as error:
        _put_on_form(form, error)
        return _form_refused(request, invoice, "void_form", form)
    messages.success(request, f"{invoice} is void.")
    return _to_detail(invoice)


@require_POST
@finance_required
def invoice_credit_note(request, invoice_id: int):
    invoice = _invoice(request, invoice_id)
    form = CreditNoteForm(request.POST)
    if not form.is_valid():
        return _form_refused(request, invoice, "credit_form", form)
    try:
        note = invoicing.credit_note_create(
            invoice_id=invoice.pk, actor=request.user, amount=form.cleaned_data["amount"],
            reason=form.cleaned_data["reason"],
        )
    except ValidationError as error:
        # The service's field errors (an amount over what is left to credit) go on the form.
        _put_on_form(form, error)
        return _form_refused(request, invoice, "credit_form", form)
    messages.success(request, f"Credit note {note.number} for {note.amount} issued.")
    return _to_detail(invoice)


@require_GET
@finance_required
def invoice_download(request, invoice_id: int, fmt: str):
    if fmt not in CONTENT_TYPES:
        raise Http404
    invoice = invoice_for_download(user=request.user, invoice_id=invoice_id, fmt=fmt)
    response = invoice_file(invoice=invoice, fmt=fmt)
    invoices_export_record(actor=request.user, fmt=fmt, invoice=invoice)
    return response


@require_http_methods(["GET", "POST"])
@finance_required
def invoices_export(request, fmt: str):
    """The filtered list as a file: written now when short; when longer than is written while
    one waits, a GET offers to write it in the background and a POST asks for that."""
    if fmt not in ("csv", "xlsx"):
        raise Http404
    _, errors, invoices = _filtered(request)
    if errors:
        messages.error(request, "This filter cannot be applied: " + "; ".join(errors))
        return redirect(reverse("billing:invoices"))
    count = invoices.count()
    filters = invoice_exports.export_filters(request.GET)
    if request.method == "POST":
        export = invoice_exports.invoice_export_request(
            actor=request.user, fmt=fmt, filters=filters, invoice_count=count
        )
        messages.success(
            request, f"The {fmt.upper()} of {count:,} invoices is being written: it will be "
            "ready to download here in a minute or two.")
        return redirect(reverse("billing:invoice-exports") + f"?new={export.pk}")
    if not invoice_exports.is_inline(fmt=fmt, invoice_count=count):
        return render(request, "billing/finance/export_prepare.html", {
            "fmt": fmt, "count": count, "limit": invoice_exports.inline_limit(fmt),
            "filters": filters, "query": request.GET.urlencode(),
        })
    invoices_export_record(actor=request.user, fmt=fmt, invoice_count=count, filters=filters)
    return invoices_file(invoices=invoices, fmt=fmt)
