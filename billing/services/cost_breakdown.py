"""A tenant's cost by workload, by person or by label, for a month or a range of months, priced
exactly as its invoices are (issue 35).

Reads only; it sits beside the invoice computation because it is that computation's: a month
with an invoice (a draft or issued one, not void) is broken down from the invoice's own lines,
discount and tax, as billed; a month without one is computed as its draft would be
(`invoicing_drafts.month_usage` and `compute_drafts`, nothing written), the current month too,
over what is metered so far. Each month's lines are shared out between the groups by the
unit-seconds their allocated usage records hold of each line (`calculations.breakdown`), so
every month's rows add up to its invoice's total to the cent; the months are then added up.

A constant number of queries whatever the data: the months' invoices and their lines (two), the
months' usage grouped per month, group, class and rate period in one query, the names of the
groups (one), and per month without an invoice the draft's few reads (a range is at most
`MAX_MONTHS` months).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import MAXYEAR, UTC, date, datetime
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import OuterRef, Prefetch, Q, Subquery, Sum
from django.db.models.functions import TruncMonth

from core.errors import RuleViolation
from tenants.models import Tenant
from tenants.workloads.models import Workload

from ..calculations.breakdown import (
    CREDIT,
    UNATTRIBUTED,
    BilledLine,
    BreakdownRow,
    GroupUsage,
    breakdown,
)
from ..calculations.money import next_month
from ..models import BillingAccount, Invoice, InvoiceLine, InvoiceStatus, Rate, UsageRecord
from .invoicing_drafts import compute_drafts, month_usage

MAX_MONTHS = 13  # the usage explorer's longest range (366 days) spans 13 months
HUNDRED = Decimal(100)


class By:
    """What a breakdown groups by: the usage record's column, and its name in the API."""

    WORKLOAD = "workload"
    PERSON = "person"
    LABEL = "label"
    CHOICES = [(WORKLOAD, "Workload"), (PERSON, "Person"), (LABEL, "Label")]
    COLUMN = {WORKLOAD: "workload_id", PERSON: "launched_by_id", LABEL: "label"}


@dataclass(frozen=True)
class CostRow:
    """One group's cost over the range: its usage at the invoices' prices, its share of the
    downtime credit, discount and tax, and the total it adds to the invoices."""

    key: str  # the workload's id, the person's username, the label; "" when unattributed
    name: str
    detail: str
    kind: str  # "group", "unattributed" or "credit"
    usage: Decimal
    credit: Decimal
    discount: Decimal
    tax: Decimal
    total: Decimal
    unit_hours: Decimal
    share_percent: Decimal  # of the positive rows' sum: -100.0 to 100.0


@dataclass(frozen=True)
class CostBreakdown:
    """A tenant's cost over [start, end) grouped by `by`; totals equal its invoices'."""

    tenant: Tenant
    by: str
    start: datetime
    end: datetime
    currency: str
    rows: list[CostRow]
    invoiced_months: list[str] = field(default_factory=list)
    computed_months: list[str] = field(default_factory=list)

    @property
    def total(self) -> Decimal:
        return sum((row.total for row in self.rows), Decimal("0.00"))

    @property
    def months(self) -> str:
        last = next_month(self.start)
        if last >= self.end:
            return f"{self.start:%B %Y}"
        return f"{self.start:%B %Y} to {_month_before(self.end):%B %Y}"

    def chart(self) -> dict:
        """The groups' totals as a horizontal bar chart (the ten largest, then the rest)."""
        rows = sorted((r for r in self.rows if r.kind != "credit"), key=lambda r: -r.total)
        shown, rest = rows[:10], rows[10:]
        labels = [row.name for row in shown]
        values = [str(row.total) for row in shown]
        if rest:
            labels.append(f"{len(rest)} more")
            values.append(str(sum((row.total for row in rest), Decimal("0.00"))))
        return {"labels": labels, "values": values, "currency": self.currency}


def _month_before(end: datetime) -> datetime:
    return datetime(end.year - (end.month == 1), (end.month - 2) % 12 + 1, 1, tzinfo=UTC)


def month_range(first: date, last: date) -> tuple[datetime, datetime]:
    """[first month's start, the start of the month after `last`), at most MAX_MONTHS months.
    Raises RuleViolation for a range that cannot be one (and for December of the last year a
    date holds: no month comes after it)."""
    if (last.year, last.month) >= (MAXYEAR, 12):
        raise RuleViolation(f"A breakdown ends by {MAXYEAR - 1}-12 at the latest.")
    start = datetime(first.year, first.month, 1, tzinfo=UTC)
    end = next_month(datetime(last.year, last.month, 1, tzinfo=UTC))
    months = (end.year - start.year) * 12 + end.month - start.month
    if months < 1:
        raise RuleViolation("The range ends before it starts.")
    if months > MAX_MONTHS:
        raise RuleViolation(f"A breakdown covers at most {MAX_MONTHS} months; this range has "
                            f"{months}.")
    return start, end


def _months(start: datetime, end: datetime) -> list[datetime]:
    months, month = [], start
    while month < end:
        months.append(month)
        month = next_month(month)
    return months


def grouped_usage(*, tenant_ids: list[int], by: str, start: datetime, end: datetime
                  ) -> dict[tuple[int, datetime], list[GroupUsage]]:
    """Per tenant and month, each group's allocated unit-seconds per class and rate period (the
    rate in force at the hour, as the invoices pick it), summed in one query."""
    in_force = Rate.objects.filter(
        resource=OuterRef("resource"), valid_from__lte=OuterRef("hour")
    ).filter(Q(valid_to__isnull=True) | Q(valid_to__gt=OuterRef("hour")))
    rows = (
        UsageRecord.objects.filter(
            tenant_id__in=tenant_ids, source=UsageRecord.Source.ALLOCATED, hour__gte=start,
            hour__lt=end,
        )
        .annotate(month=TruncMonth("hour", tzinfo=UTC),
                  rate_from=Subquery(in_force.values("valid_from")[:1]))
        .values("tenant_id", "month", By.COLUMN[by], "resource", "rate_from")
        .annotate(seconds=Sum("unit_seconds"))
        .order_by()
    )
    usage: dict[tuple[int, datetime], list[GroupUsage]] = defaultdict(list)
    for row in rows:
        month = row["month"].astimezone(UTC)
        if row["rate_from"] is None:
            continue  # no rate prices it: never billed, so it costs nothing here either
        key = row[By.COLUMN[by]]
        usage[row["tenant_id"], month].append(GroupUsage(
            UNATTRIBUTED if key in (None, "") else key, row["resource"],
            max(row["rate_from"], month), int(row["seconds"]),
        ))
    return usage


def _invoices(tenant: Tenant, start: datetime, end: datetime) -> dict[datetime, Invoice]:
    invoices = (
        Invoice.objects.filter(tenant=tenant, period_start__gte=start, period_start__lt=end)
        .exclude(status=InvoiceStatus.VOID)
        .only("pk", "tenant_id", "period_start", "discount", "tax", "total", "status")
        .prefetch_related(Prefetch("lines", queryset=InvoiceLine.objects.only(
            "invoice_id", "kind", "resource", "period_start", "amount").order_by("position")))
    )
    return {invoice.period_start.astimezone(UTC): invoice for invoice in invoices}


def _computed(tenant: Tenant, month: datetime) -> tuple[list[BilledLine], Decimal, Decimal]:
    """The month as its draft would be computed now (nothing written)."""
    end = next_month(month)
    account = BillingAccount.objects.filter(tenant=tenant).first() or BillingAccount(
        tenant=tenant)
    drafts, errors = compute_drafts(
        tenants=[tenant], accounts={tenant.pk: account},
        usage=month_usage(start=month, end=end, tenant_ids=[tenant.pk]),
    )
    if tenant.pk in errors:
        raise errors[tenant.pk]
    computation = drafts[0].computation
    lines = [BilledLine(line.kind, line.resource, line.period_start, line.amount)
             for line in computation.lines + computation.credit_lines]
    return lines, computation.discount, computation.tax


def _names(by: str, keys: set[Hashable]) -> dict[Hashable, tuple[str, str, str]]:
    """(key shown, name, detail) per group key, in one query."""
    ids = [key for key in keys if key not in (UNATTRIBUTED, CREDIT)]
    if by == By.WORKLOAD:
        return {
            w.pk: (str(w.pk), w.name, w.kind_label + (" · deleted" if w.deleted_at else "")
                   + (f" · {w.label}" if w.label else ""))
            for w in Workload.objects.filter(pk__in=ids).only(
                "pk", "name", "kind", "label", "deleted_at")
        }
    if by == By.PERSON:
        return {
            user.pk: (user.get_username(), user.get_full_name() or user.get_username(),
                      user.email)
            for user in get_user_model().objects.filter(pk__in=ids).only(
                "pk", "username", "first_name", "last_name", "email")
        }
    return {key: (key, key, "") for key in ids}


SPECIAL = {
    UNATTRIBUTED: ("", "Unattributed", "unattributed",
                   "Usage of no workload, launcher or label (or no longer metered)"),
    CREDIT: ("", "Downtime credit", "credit",
             "GPU time on hosts under a critical health event: credited per host"),
}


def _share(total: Decimal, cost: Decimal) -> Decimal:
    """`total` in per cent of `cost` (the positive rows' sum), within -100.0 to 100.0: a
    positive row's is at most 100 by construction, a negative one's (a credit exceeding the
    cost, as no invoice should hold) is bounded so that no reader's field overflows."""
    if not cost:
        return Decimal("0.0")
    return max(min(total * 100 / cost, HUNDRED), -HUNDRED).quantize(Decimal("0.1"))


def _rows(by: str, totals: dict[Hashable, BreakdownRow]) -> list[CostRow]:
    names = _names(by, set(totals))
    # Shares of what the rows cost before credits: the credit can bring the grand total near
    # zero (a share of it would run to thousands of per cent); a credit's share is negative.
    cost = sum((row.total for row in totals.values() if row.total > 0), Decimal("0.00"))
    rows = []
    for key, row in totals.items():
        if key in SPECIAL:
            shown, name, kind, detail = SPECIAL[key]
        else:
            shown, name, detail = names.get(key, (str(key), str(key), ""))
            kind = "group"
        rows.append(CostRow(
            key=shown, name=name, detail=detail, kind=kind, usage=row.usage, credit=row.credit,
            discount=row.discount, tax=row.tax, total=row.total,
            unit_hours=(Decimal(row.unit_seconds) / 3600).quantize(Decimal("0.01")),
            share_percent=_share(row.total, cost),
        ))
    order = {"group": 0, "unattributed": 1, "credit": 2}
    rows.sort(key=lambda r: (order[r.kind], -r.total, r.name.lower()))
    return rows


def cost_breakdown(*, tenant: Tenant, by: str, start: datetime, end: datetime) -> CostBreakdown:
    """`tenant`'s cost over whole months [start, end) grouped by `by` (By.*), as invoiced.
    Raises RuleViolation when a month without an invoice cannot be priced (the rate card)."""
    if by not in By.COLUMN:
        raise RuleViolation(f"Break cost down by {', '.join(By.COLUMN)}, not “{by}”.")
    usage = {month: rows for (_, month), rows in grouped_usage(
        tenant_ids=[tenant.pk], by=by, start=start, end=end).items()}
    invoices = _invoices(tenant, start, end)
    totals: dict[Hashable, BreakdownRow] = {}
    invoiced, computed = [], []
    for month in _months(start, end):
        invoice = invoices.get(month)
        if invoice is not None:
            lines = [BilledLine(line.kind, line.resource, line.period_start.astimezone(UTC),
                                line.amount) for line in invoice.lines.all()]
            discount, tax = invoice.discount, invoice.tax
            invoiced.append(f"{month:%Y-%m}")
        elif month in usage:
            lines, discount, tax = _computed(tenant, month)
            computed.append(f"{month:%Y-%m}")
        else:
            continue  # nothing metered, no invoice: nothing to break down
        for key, row in breakdown(lines=lines, usage=usage.get(month, []), discount=discount,
                                  tax=tax).items():
            totals.setdefault(key, BreakdownRow(key)).add(row)
    return CostBreakdown(
        tenant=tenant, by=by, start=start, end=end, currency=settings.BILLING_CURRENCY,
        rows=_rows(by, totals), invoiced_months=invoiced, computed_months=computed,
    )
