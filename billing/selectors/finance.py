"""Finance's reads: the invoice list with its totals, one invoice with its trail, the roll-up by
cost center. Every query starts from `invoices_visible_to`, and each is a fixed number of SQL
queries whatever the number of invoices."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import (
    Count,
    DecimalField,
    F,
    Prefetch,
    Q,
    QuerySet,
    Sum,
    Value,
    Window,
    prefetch_related_objects,
)
from django.db.models.functions import Coalesce, RowNumber
from django.http import Http404
from django.utils import timezone

from core.models import AuditEvent
from tenants.access import access_for

from ..models import CreditNote, Invoice, InvoiceLine, InvoiceStatus, InvoiceSummary, Payment
from .invoices import invoices_visible_to
from .tenant_filter import few_choices

CENT = Decimal("0.01")
ZERO = Value(Decimal("0"), output_field=DecimalField(max_digits=16, decimal_places=2))
# What is owed: issued and paid invoices (drafts may still change, void ones are not owed).
BILLED = Q(status__in=[InvoiceStatus.ISSUED, InvoiceStatus.PAID])
MONEY_SUM = DecimalField(max_digits=20, decimal_places=2)


def invoices_for_list(*, user) -> QuerySet[Invoice]:
    """The invoices `user` may see, with what a list row shows, newest period first."""
    return (
        invoices_visible_to(user)
        .select_related("tenant", "issued_by")
        .order_by("-period_start", "tenant_name", "-id")
    )


# The fields a row of the finance invoice list shows (invoice_row_values).
LIST_FIELDS = (
    "id", "number", "status", "tenant_name", "tenant__slug", "cost_center", "period_start",
    "issue_date", "due_date", "subtotal", "total", "currency",
)


def invoice_rows_for_list(invoices: QuerySet[Invoice]) -> QuerySet[Invoice]:
    """`invoices` reading only what a row of the list shows."""
    return invoices.select_related(None).select_related("tenant").only(*LIST_FIELDS)


def invoice_row_values(invoice: Invoice) -> dict:
    """What one row of the finance invoice list shows, as plain values: the period's month in
    the portal's time zone, dates as ISO days and amounts grouped to the cent (they are
    stored to the cent)."""
    return {
        "pk": invoice.pk, "number": invoice.number, "status": invoice.status,
        "status_color": invoice.status_color, "status_label": invoice.get_status_display(),
        "is_draft": invoice.is_draft, "month_label": invoice.month_label,
        "tenant_name": invoice.tenant_name, "tenant_slug": invoice.tenant.slug,
        "cost_center": invoice.cost_center,
        "period": f"{timezone.localtime(invoice.period_start):%Y-%m}",
        "issue_date": _day(invoice.issue_date), "due_date": _day(invoice.due_date),
        "subtotal": f"{invoice.subtotal:,.2f}", "total": f"{invoice.total:,.2f}",
        "currency": invoice.currency,
    }


def _day(value) -> str:
    return value.isoformat() if value else "—"


COUNTS = ("count", "drafts")


@dataclass(frozen=True)
class InvoiceTotals:
    """The sums over a whole filtered set of invoices (not only the page shown)."""

    count: int
    drafts: int
    subtotal: Decimal
    discount: Decimal
    tax: Decimal
    total: Decimal
    credited: Decimal = Decimal("0")
    paid: Decimal = Decimal("0")
    # What is left to pay on the issued and paid invoices among them (drafts are not owed yet,
    # void ones never): total - credited - paid of those; negative when over-settled.
    balance_due: Decimal = Decimal("0")

    @property
    def net_total(self) -> Decimal:
        return self.total - self.credited


def invoice_totals(*, invoices: QuerySet[Invoice]) -> InvoiceTotals:
    """Count and sums of `invoices`, computed in SQL in one query."""
    # Aliased apart from the fields' names: an expression over `total` would read the alias.
    fields = {"subtotal": "subtotal", "discount": "discount", "tax": "tax", "total": "total",
              "credited": "amount_credited", "paid": "amount_paid"}
    row = invoices.order_by().aggregate(
        count=Count("id"),
        drafts=Count("id", filter=Q(status=InvoiceStatus.DRAFT)),
        **{f"sum_{key}": Coalesce(Sum(field), ZERO) for key, field in fields.items()},
        sum_balance_due=Coalesce(Sum(F("total") - F("amount_credited") - F("amount_paid"),
                                     filter=BILLED, output_field=MONEY_SUM), ZERO),
    )
    sums = {key.removeprefix("sum_"): value for key, value in row.items()}
    money = {key: value.quantize(CENT) for key, value in sums.items() if key not in COUNTS}
    return InvoiceTotals(count=sums["count"], drafts=sums["drafts"], **money)


# The list's filters that the summary table can answer: none but the status (and the order).
SUMMARY_FILTERS = frozenset({"status", "sort"})


def invoice_list_totals(
    *, user, invoices: QuerySet[Invoice], filters: dict | None
) -> InvoiceTotals:
    """The totals of the invoice list: read from `InvoiceSummary` (a row per status, kept by
    triggers) while the list shows every invoice, or every invoice of some statuses, to
    someone who sees every tenant; else summed over the filtered `invoices`. `filters`: the
    filter form's cleaned data (None: unknown, so summed). One query."""
    if filters is None:
        return invoice_totals(invoices=invoices)
    narrowed = any(value not in (None, "", [], ()) for name, value in filters.items()
                   if name not in SUMMARY_FILTERS)
    if narrowed or not access_for(user).sees_all_tenants:
        return invoice_totals(invoices=invoices)
    return invoice_summary_totals(statuses=filters.get("status") or ())


def invoice_summary_totals(*, statuses=()) -> InvoiceTotals:
    """Count and sums of every invoice (of `statuses`, if given), from the summary table."""
    rows = InvoiceSummary.objects.all()
    if statuses:
        rows = rows.filter(status__in=statuses)
    count = drafts = 0
    sums = dict.fromkeys(("subtotal", "discount", "tax", "total", "credited", "paid"),
                         Decimal("0"))
    due = Decimal("0")
    for row in rows.values_list("status", "invoices", *sums):
        status, invoices, *money = row
        count += invoices
        if status == InvoiceStatus.DRAFT:
            drafts += invoices
        for key, value in zip(sums, money, strict=True):
            sums[key] += value
        if status in (InvoiceStatus.ISSUED, InvoiceStatus.PAID):
            total, credited, paid = money[3], money[4], money[5]
            due += total - credited - paid
    sums["balance_due"] = due
    return InvoiceTotals(count=count, drafts=drafts,
                         **{key: value.quantize(CENT) for key, value in sums.items()})


def invoice_for_detail(*, user, invoice_id: int) -> Invoice:
    """One invoice `user` may see (404 otherwise), with its lines, credit notes and payments:
    four queries whatever the invoice holds.

    The invoice's row carries what its page and API answer show of its tenant and people, as
    annotations read through joins (one row: nothing to count): `tenant_slug`,
    `issued_by_username` (and `_first_name`, `_last_name`), `paid_by_username` and
    `voided_by_username`. The tenant and the users are still there as relations, read when
    asked for (the actions that need them)."""
    invoices = Invoice.objects.annotate(
        tenant_slug=F("tenant__slug"),
        issued_by_username=F("issued_by__username"),
        issued_by_first_name=F("issued_by__first_name"),
        issued_by_last_name=F("issued_by__last_name"),
        paid_by_username=F("paid_by__username"),
        voided_by_username=F("voided_by__username"),
    )
    invoice = invoices_visible_to(user, invoices).filter(pk=invoice_id).first()
    if invoice is None:
        raise Http404("No invoice matches the given query.")
    prefetch_related_objects(
        [invoice],
        Prefetch("lines", queryset=InvoiceLine.objects.order_by("position", "id")),
        Prefetch("credit_notes", queryset=CreditNote.objects.select_related("created_by")),
        Prefetch("payments", queryset=Payment.objects.select_related("recorded_by")
                 .order_by("date", "id")),
    )
    return invoice


# Every download of an invoice is audited: its trail shows the latest this many, and says how
# many earlier ones there were (the decisions are always shown whole).
TRAIL_DOWNLOADS_SHOWN = 10
DOWNLOAD_ACTION = "invoice.export"


@dataclass(frozen=True)
class AuditTrail:
    events: list[AuditEvent]  # oldest first
    earlier_downloads: int  # downloads older than those in `events`


def invoice_audit_trail(*, invoice: Invoice) -> AuditTrail:
    """What was done to the invoice and its credit notes, oldest first (the notes as
    prefetched by `invoice_for_detail`): every decision, and the latest
    `TRAIL_DOWNLOADS_SHOWN` downloads with the number of earlier ones. One query, whose rows do
    not grow with the downloads."""
    notes = [str(note.pk) for note in invoice.credit_notes.all()]
    about = Q(object_type=Invoice._meta.label_lower, object_id=str(invoice.pk))
    if notes:
        about |= Q(object_type=CreditNote._meta.label_lower, object_id__in=notes)
    by_action = {"partition_by": F("action")}
    events = list(
        AuditEvent.objects.filter(about)
        .annotate(
            trail_rank=Window(RowNumber(), order_by=[F("created_at").desc(), F("id").desc()],
                              **by_action),
            of_action=Window(Count("*"), **by_action),
        )
        .filter(~Q(action=DOWNLOAD_ACTION) | Q(trail_rank__lte=TRAIL_DOWNLOADS_SHOWN))
        .order_by("created_at", "id")
    )
    downloads = next((e.of_action for e in events if e.action == DOWNLOAD_ACTION), 0)
    return AuditTrail(events=events,
                      earlier_downloads=max(0, downloads - TRAIL_DOWNLOADS_SHOWN))


def invoice_filter_choices(*, user) -> dict[str, list]:
    """What the list's filter selects offer: the cost centers of the invoices `user` sees, None
    when they are too many for a select. (The tenant is a slug typed in: a select of thousands
    of tenants was most of the page.)"""
    visible = invoices_visible_to(user).order_by()
    return {
        "cost_centers": few_choices(
            visible.exclude(cost_center="").values_list("cost_center", flat=True)
            .distinct().order_by("cost_center")
        ),
    }


@dataclass(frozen=True)
class CostCenterMonth:
    """One cost center's invoices of one month: what was billed, credited and paid, and what is
    outstanding (total - credited - paid over the issued and paid invoices). `over_settled` is
    what credits and payments exceed their own invoices' totals by (refunds owed): shown as a
    flag, since the outstanding sum nets it against the other invoices' balances."""

    cost_center: str
    month: datetime
    invoices: int
    subtotal: Decimal
    total: Decimal
    credited: Decimal
    paid: Decimal
    outstanding: Decimal
    over_settled: Decimal = Decimal("0")

    @property
    def net_total(self) -> Decimal:
        return self.total - self.credited


def cost_center_rollup(*, invoices: QuerySet[Invoice]) -> list[CostCenterMonth]:
    """`invoices` summed per cost center and month (newest month first), in one query."""
    balance = F("total") - F("amount_credited") - F("amount_paid")
    rows = (
        invoices.order_by()
        .values("cost_center", "period_start")
        .annotate(
            count=Count("id"),
            subtotal_sum=Coalesce(Sum("subtotal"), ZERO),
            total_sum=Coalesce(Sum("total"), ZERO),
            credited_sum=Coalesce(Sum("amount_credited", filter=BILLED), ZERO),
            paid_sum=Coalesce(Sum("amount_paid", filter=BILLED), ZERO),
            outstanding_sum=Coalesce(Sum(balance, filter=BILLED, output_field=MONEY_SUM), ZERO),
            over_sum=Coalesce(
                Sum(-balance, filter=BILLED & Q(total__lt=F("amount_credited") + F("amount_paid")),
                    output_field=MONEY_SUM), ZERO),
        )
        .order_by("-period_start", "cost_center")
    )
    return [
        CostCenterMonth(
            cost_center=row["cost_center"],
            month=row["period_start"],
            invoices=row["count"],
            subtotal=row["subtotal_sum"].quantize(CENT),
            total=row["total_sum"].quantize(CENT),
            credited=row["credited_sum"].quantize(CENT),
            paid=row["paid_sum"].quantize(CENT),
            outstanding=row["outstanding_sum"].quantize(CENT),
            over_settled=row["over_sum"].quantize(CENT),
        )
        for row in rows
    ]
