"""Invoices as people may see them, as the exports read them, and the downtime credit's facts.

Finance and platform admins see every invoice; a tenant's members see their tenants' invoices
once issued (drafts are finance's working copies). Missing and forbidden are the same 404.
"""

from collections import defaultdict
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import (
    BinaryField,
    Count,
    F,
    FilteredRelation,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.shortcuts import get_object_or_404
from django.utils import timezone

from inventory.models import GPU, HealthEvent, Severity
from tenants.access import access_for

from .. import calculations, documents
from ..calculations.capacity import CappedHour, cap_to_capacity
from ..calculations.downtime import seconds_down
from ..calculations.invoicing import class_label
from ..exports import FILE_LAYOUT
from ..models import Invoice, InvoiceFile, InvoiceLine, InvoiceStatus, UsageRecord


def invoices_visible_to(user, invoices: QuerySet[Invoice] | None = None) -> QuerySet[Invoice]:
    """The invoices `user` may read among `invoices` (by default every invoice, with its
    tenant joined)."""
    access = access_for(user)
    if invoices is None:
        invoices = Invoice.objects.select_related("tenant")
    if access.sees_all_tenants:
        return invoices
    return invoices.filter(tenant_id__in=list(access.tenant_roles)).exclude(
        status=InvoiceStatus.DRAFT
    )


def invoice_get_for_user(*, user, invoice_id: int) -> Invoice:
    """The invoice `invoice_id` if `user` may see it, else 404."""
    return get_object_or_404(invoices_visible_to(user), pk=invoice_id)


# The kept file an invoice is read with by `invoice_for_download`: its bytes, or None.
STORED_FILE = "stored_file"


def with_stored_file(invoices: QuerySet[Invoice], *, fmt: str) -> QuerySet[Invoice]:
    """`invoices`, each with its kept `fmt` file (`STORED_FILE`) if it is current: rendered
    for the status the invoice has now, in the current layout."""
    stored = InvoiceFile.objects.filter(
        invoice=OuterRef("pk"), fmt=fmt, status=OuterRef("status"), layout=FILE_LAYOUT
    ).values("body")[:1]
    return invoices.annotate(**{STORED_FILE: Subquery(stored, output_field=BinaryField())})


def invoice_for_download(*, user, invoice_id: int, fmt: str) -> Invoice:
    """The invoice `invoice_id` if `user` may see it (else 404), with its tenant and its kept
    `fmt` file, in one query; its lines are read only if the file must be rendered."""
    return get_object_or_404(with_stored_file(invoices_visible_to(user), fmt=fmt),
                             pk=invoice_id)


def _line(line: InvoiceLine) -> calculations.InvoiceLine:
    return calculations.InvoiceLine(
        kind=line.kind,
        resource=line.resource,
        label=class_label(line.resource),
        period_start=line.period_start,
        period_end=line.period_end,
        unit_seconds=line.unit_seconds,
        quantity_hours=line.quantity_hours,
        quantity=line.quantity,
        unit=line.unit,
        unit_price=line.unit_price,
        amount=line.amount,
    )


def _unpriced(item: dict) -> calculations.UnpricedUsage:
    return calculations.UnpricedUsage(
        resource=item["resource"],
        label=item.get("label") or class_label(item["resource"]),
        reason=item["reason"],
        period_start=datetime.fromisoformat(item["period_start"]),
        period_end=datetime.fromisoformat(item["period_end"]),
        unit_seconds=int(item["unit_seconds"]),
        quantity_hours=Decimal(item["quantity_hours"]),
    )


def invoice_computation(*, invoice: Invoice) -> calculations.InvoiceComputation:
    """The stored invoice as the calculations describe one (lines as stored, never recomputed).

    Uses `invoice.lines.all()`, so a caller listing many invoices prefetches `lines`.
    """
    lines = sorted(invoice.lines.all(), key=lambda line: (line.position, line.pk))
    return calculations.InvoiceComputation(
        period_start=invoice.period_start,
        period_end=invoice.period_end,
        lines=tuple(_line(line) for line in lines if line.kind == InvoiceLine.Kind.USAGE),
        credit_lines=tuple(_line(line) for line in lines if line.kind == InvoiceLine.Kind.CREDIT),
        unpriced=tuple(_unpriced(item) for item in invoice.unpriced or []),
        subtotal=invoice.subtotal,
        discount_percent=invoice.discount_percent,
        discount=invoice.discount,
        tax_percent=invoice.tax_percent,
        tax=invoice.tax,
        total=invoice.total,
    )


def invoice_document(*, invoice: Invoice) -> documents.InvoiceDocument:
    """What the exports render for `invoice`: as issued, or a draft as it stands (numbered
    "DRAFT", dated today)."""
    issue_date: date = invoice.issue_date or timezone.localdate()
    due_date: date = invoice.due_date or issue_date + timedelta(
        days=settings.BILLING_PAYMENT_TERMS_DAYS
    )
    return documents.invoice_document(
        computation=invoice_computation(invoice=invoice),
        number=invoice.number or "DRAFT",
        tenant_name=invoice.tenant_name,
        tenant_slug=invoice.tenant.slug,
        cost_center=invoice.cost_center,
        issue_date=issue_date,
        due_date=due_date,
        currency=invoice.currency or settings.BILLING_CURRENCY,
        status=invoice.status,
        credited=invoice.amount_credited,
        paid=invoice.amount_paid,
        settlement=invoice_settlement(invoice=invoice),
    )


def invoice_settlement(*, invoice: Invoice) -> tuple[documents.SettlementLine, ...]:
    """The invoice's credit notes and payments, oldest first, as its files print them (none
    read when its row says it has none)."""
    lines = []
    if invoice.amount_credited:
        lines += [
            documents.SettlementLine(kind="credit_note", date=note.issue_date,
                                     reference=note.number, description=note.reason,
                                     amount=note.amount)
            for note in sorted(invoice.credit_notes.all(), key=lambda n: (n.issue_date, n.pk))
        ]
    if invoice.amount_paid:
        lines += [
            documents.SettlementLine(kind="payment", date=payment.date,
                                     reference=payment.reference, description="Payment",
                                     amount=payment.amount)
            for payment in sorted(invoice.payments.all(), key=lambda p: (p.date, p.pk))
        ]
    return tuple(sorted(lines, key=lambda line: line.date))


# Rows fetched per round trip of an export's server-side cursor (memory holds about this many
# invoice lines at a time, whatever the number exported).
EXPORT_CHUNK = 2000

# What an export reads of each invoice and of each of its printed lines (usage, then credits).
_EXPORT_INVOICE_FIELDS = (
    "pk",
    "number",
    "tenant_name",
    "tenant__slug",
    "cost_center",
    "period_start",
    "period_end",
    "issue_date",
    "due_date",
    "currency",
    "status",
    "discount_percent",
    "discount",
    "tax_percent",
    "tax",
    "total",
    "unpriced",
    "subtotal",
    "amount_credited",
    "amount_paid",
)
_EXPORT_LINE_FIELDS = (
    "kind",
    "resource",
    "period_start",
    "period_end",
    "quantity_hours",
    "quantity",
    "unit",
    "unit_price",
    "amount",
    "unit_seconds",
)
_INVOICE_WIDTH = len(_EXPORT_INVOICE_FIELDS)
_PRINTED_KINDS = (InvoiceLine.Kind.USAGE, InvoiceLine.Kind.CREDIT)


def _invoices_with_lines(invoices: QuerySet[Invoice]) -> Iterator[tuple[tuple, list[tuple]]]:
    """Each invoice of `invoices` (in their order) as a tuple of `_EXPORT_INVOICE_FIELDS`, with
    its printed lines as tuples of the invoice's id and `_EXPORT_LINE_FIELDS`, usage lines
    then credits, each in their printed order (position, id), as `invoice_computation` reads
    them.

    One query whatever the number: the invoices left-joined to their lines, read through a
    server-side cursor `EXPORT_CHUNK` rows at a time, ordered by invoice (the list's order,
    then the id, so that an invoice's rows come together) and line."""
    order = [*(invoices.query.order_by or Invoice._meta.ordering), "pk"]
    rows = (
        invoices.annotate(
            printed=FilteredRelation("lines", condition=Q(lines__kind__in=_PRINTED_KINDS))
        )
        .order_by(
            *order,
            # "usage" sorts after "credit": descending puts usage lines first.
            F("printed__kind").desc(),
            "printed__position",
            "printed__pk",
        )
        .values_list(*_EXPORT_INVOICE_FIELDS, *(f"printed__{f}" for f in _EXPORT_LINE_FIELDS))
    )
    current: tuple | None = None
    lines: list[tuple] = []
    for row in rows.iterator(chunk_size=EXPORT_CHUNK):
        facts = row[:_INVOICE_WIDTH]
        if current is None or facts[0] != current[0]:
            if current is not None:
                yield current, lines
            current, lines = facts, []
        if row[_INVOICE_WIDTH] is not None:  # an invoice without printed lines has one row
            lines.append((facts[0], *row[_INVOICE_WIDTH:]))
    if current is not None:
        yield current, lines


def _computation(facts: tuple, lines: list[tuple]) -> calculations.InvoiceComputation:
    """`invoice_computation` of an invoice read as `_invoices_with_lines` reads it."""
    (_, _, _, _, _, start, end, _, _, _, _, discount_percent, discount, tax_percent, tax,
     total, unpriced, subtotal, _, _) = facts  # fmt: skip
    labels: dict[str, str] = {}

    def line(values: tuple) -> calculations.InvoiceLine:
        (_, kind, resource, line_start, line_end, hours, quantity, unit, price, amount,
         seconds) = values  # fmt: skip
        label = labels.get(resource) or labels.setdefault(resource, class_label(resource))
        return calculations.InvoiceLine(
            kind=kind, resource=resource, label=label, period_start=line_start,
            period_end=line_end, unit_seconds=seconds, quantity_hours=hours, quantity=quantity,
            unit=unit, unit_price=price, amount=amount,
        )

    usage = InvoiceLine.Kind.USAGE
    return calculations.InvoiceComputation(
        period_start=start,
        period_end=end,
        lines=tuple(line(values) for values in lines if values[1] == usage),
        credit_lines=tuple(line(values) for values in lines if values[1] != usage),
        unpriced=tuple(_unpriced(item) for item in unpriced or []),
        subtotal=subtotal,
        discount_percent=discount_percent,
        discount=discount,
        tax_percent=tax_percent,
        tax=tax,
        total=total,
    )


def invoice_documents(*, invoices: QuerySet[Invoice]) -> Iterator[documents.InvoiceDocument]:
    """The documents of many invoices (an export of a filtered list), one at a time, what
    `invoice_document` says of each: one query whatever their number, and memory bounded
    (see `_invoices_with_lines`)."""
    today = timezone.localdate()
    for facts, lines in _invoices_with_lines(invoices):
        number, tenant_name, slug, cost_center = facts[1:5]
        issue, due, currency, status = facts[7:11]
        issue_date = issue or today
        yield documents.invoice_document(
            computation=_computation(facts, lines),
            number=number or "DRAFT",
            tenant_name=tenant_name,
            tenant_slug=slug,
            cost_center=cost_center,
            issue_date=issue_date,
            due_date=due or issue_date + timedelta(days=settings.BILLING_PAYMENT_TERMS_DAYS),
            currency=currency or settings.BILLING_CURRENCY,
            status=status,
            credited=facts[-2],
            paid=facts[-1],
        )


def _export_facts(row: tuple, today: date) -> documents.ExportInvoice:
    (_, number, tenant_name, slug, cost_center, start, end, issue, due, currency, status,
     discount_percent, discount, tax_percent, tax, total, unpriced, _, credited,
     paid) = row  # fmt: skip
    issue_date = issue or today
    return documents.ExportInvoice(
        number=number or "DRAFT",
        tenant_name=tenant_name,
        tenant_slug=slug,
        cost_center=cost_center,
        period_start=start.date(),
        period_end=documents.last_day(end),
        issue_date=issue_date,
        due_date=due or issue_date + timedelta(days=settings.BILLING_PAYMENT_TERMS_DAYS),
        currency=currency or settings.BILLING_CURRENCY,
        status=status,
        discount_percent=discount_percent,
        discount=discount,
        tax_percent=tax_percent,
        tax=tax,
        total=total,
        unpriced=unpriced or [],
        lines=[],
        credited=credited,
        paid=paid,
    )


def invoice_export_values(*, invoices: QuerySet[Invoice]) -> Iterator[documents.ExportInvoice]:
    """The invoices of a list export as plain values, what `invoice_document` would say of
    each (the CSV of a list reads these: building an `InvoiceDocument`, and model instances,
    per invoice was most of that export's CPU). One query whatever their number, and memory
    bounded (see `_invoices_with_lines`); each line a tuple (invoice id, kind, resource, period
    start and end, quantity in hours, quantity, unit, unit price, amount)."""
    today = timezone.localdate()
    for facts, lines in _invoices_with_lines(invoices):
        invoice = _export_facts(facts, today)
        invoice.lines.extend(line[:10] for line in lines)
        yield invoice


# --- the downtime credit ----------------------------------------------------------------------


def _critical_events(hostnames: set[str], start: datetime, end: datetime) -> list[HealthEvent]:
    if not hostnames:
        return []
    return list(
        HealthEvent.objects.filter(
            severity=Severity.CRITICAL,
            node__hostname__in=hostnames,
            opened_at__lt=end,
        )
        .filter(Q(resolved_at__isnull=True) | Q(resolved_at__gt=start))
        .select_related("node")
        .order_by("opened_at", "pk")
    )


def _event_json(event: HealthEvent) -> dict[str, Any]:
    return {
        "id": event.pk,
        "hostname": event.node.hostname,
        "kind": event.kind,
        "detail": event.detail,
        "opened_at": event.opened_at.isoformat(),
        "resolved_at": event.resolved_at.isoformat() if event.resolved_at else None,
    }


class DowntimeCredit(NamedTuple):
    """A tenant's downtime credit for a period: its lines, the events behind each line (keyed
    by resource class and line start), and the host-hours whose credit was capped by the
    host's GPUs x its outage."""

    lines: tuple[calculations.InvoiceLine, ...]
    events_by_line: dict[tuple[str, datetime], list[dict]]
    capped: list[CappedHour]


def _host_gpus(hostnames: set[str]) -> dict[str, int]:
    rows = (
        GPU.objects.filter(node__hostname__in=sorted(hostnames))
        .values("node__hostname").annotate(gpus=Count("id")).order_by()
    )
    return {row["node__hostname"]: row["gpus"] for row in rows}


def downtime_credit(
    *,
    tenant_id: int,
    start: datetime,
    end: datetime,
    rates: list[calculations.Rate],
    usage: list[calculations.UsageAmount],
) -> DowntimeCredit:
    """Credit lines for the tenant's measured GPU time on hosts under a critical event, the
    events behind each line, and the host-hours capped.

    A host-hour's credit never exceeds its GPUs (in the inventory) x the seconds of the hour it
    was down, whatever was measured on it; and an hour's credit never exceeds what was billed
    for it (its allocated unit-seconds): DCGM may see a GPU busy a little longer than the
    reservation the invoice bills."""
    measured: dict[tuple[str, str, datetime], int] = defaultdict(int)
    rows = (
        UsageRecord.objects.filter(
            tenant_id=tenant_id,
            source=UsageRecord.Source.MEASURED,
            hour__gte=start,
            hour__lt=end,
            unit_seconds__gt=0,
        )
        .exclude(hostname="")
        .values_list("hostname", "resource", "hour", "unit_seconds")
    )
    for hostname, resource, hour, seconds in rows:
        measured[hostname, resource, hour] += seconds
    events = _critical_events({key[0] for key in measured}, start, end)
    if not events:
        return DowntimeCredit((), {}, [])
    critical = [
        calculations.CriticalEvent(event.node.hostname, event.opened_at, event.resolved_at)
        for event in events
    ]
    # Per host, hour and class, each host's credit capped by its GPUs x its outage.
    by_host: dict[tuple[str, datetime, str], int] = {}
    for hostname in sorted({event.hostname for event in critical}):
        host_measured = {key: s for key, s in measured.items() if key[0] == hostname}
        host_events = [event for event in critical if event.hostname == hostname]
        for (hour, resource), seconds in calculations.downtime_credit_by_hour(
            host_measured, host_events
        ).items():
            by_host[hostname, hour, resource] = seconds
    down = seconds_down(critical)
    gpus = _host_gpus({key[0] for key in by_host})
    kept, capped = cap_to_capacity(
        by_host, host_hour=lambda key: (key[0], key[1]), resource=lambda key: key[2],
        gpus=gpus, capacity=lambda hostname, hour: gpus[hostname] * down(hostname, hour),
    )
    credited: dict[tuple[datetime, str], int] = defaultdict(int)
    credited_hosts: dict[tuple[datetime, str], set[str]] = defaultdict(set)
    for (hostname, hour, resource), seconds in kept.items():
        if seconds:
            credited[hour, resource] += seconds
            credited_hosts[hour, resource].add(hostname)
    billed: dict[tuple[datetime, str], int] = defaultdict(int)
    for resource, hour, seconds in usage:
        billed[hour, resource] += seconds
    by_hour = {
        key: min(seconds, billed[key]) for key, seconds in credited.items() if billed[key]
    }
    lines = calculations.credit_lines(by_hour, rates, period_start=start, period_end=end)
    # Which hosts earned credit in which (hour, class): a line lists the events of those hosts.
    events_by_line: dict[tuple[str, datetime], list[dict]] = {}
    for line in lines:
        hosts = {
            hostname
            for (hour, resource), names in credited_hosts.items()
            if resource == line.resource and line.period_start <= hour < line.period_end
            and (hour, resource) in by_hour
            for hostname in names
        }
        events_by_line[line.resource, line.period_start] = [
            _event_json(event)
            for event in events
            if event.node.hostname in hosts
            and event.opened_at < line.period_end
            and (event.resolved_at is None or event.resolved_at > line.period_start)
        ]
    return DowntimeCredit(lines, events_by_line, capped)
