"""Draft invoices computed for many tenants at once: a month's usage read in one grouped query,
the invoices, their lines and their audit events written in bulk.

The month-end run drafts every tenant with usage (issue 13 measures it against one SQL
aggregation of the same rows). Reading each tenant's usage hour by hour and saving each invoice
on its own took a dozen statements per tenant; here PostgreSQL sums the month's unit-seconds per
tenant, resource class and rate period (the rate card joined as the calculations pick a rate:
the one whose validity holds the hour), and the pure `calculations.invoice_lines` prices those
sums exactly as it prices the hours: it only adds a class's hours up per rate period (and month,
for a monthly rate: an invoice is one calendar month) and keeps the first and last hour of
usage it cannot price. So a group is given to it as its unit-seconds at its first hour, plus
its last hour with none.

Tenants whose month needs the hours themselves take the hour-by-hour path unchanged: those with
measured GPU time on a host under a critical health event (the downtime credit caps each
hour's credit at the hour billed), and any with a usage record not on the hour (refused by the
calculations, as before). `invoice_compute` and `invoice_issue` compute through the same code,
for one tenant.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from core.errors import RuleViolation
from core.models import AuditEvent
from core.request_context import current_request_id
from inventory import resource_classes
from inventory.models import HealthEvent, Severity
from tenants.models import Tenant

from .. import calculations
from ..calculations.capacity import CappedHour
from ..models import (
    BillingAccount,
    Invoice,
    InvoiceLine,
    InvoiceStatus,
    MeteringFlag,
    Rate,
    UsageRecord,
)
from ..selectors.invoices import downtime_credit
from ..selectors.rates import rate_card
from ..selectors.usage import usage_amounts

logger = logging.getLogger(__name__)

ALLOCATED = UsageRecord.Source.ALLOCATED
MEASURED = UsageRecord.Source.MEASURED
# What a recomputation changes on a draft (the lifecycle fields stay as they are).
COMPUTED_FIELDS = (
    "tenant_name",
    "cost_center",
    "currency",
    "discount_percent",
    "tax_percent",
    "subtotal",
    "discount",
    "tax",
    "total",
    "unpriced",
    "computed_at",
)


@dataclass(frozen=True)
class Draft:
    """What one tenant's invoice comes to: its computation and, per credit line, its events."""

    tenant: Tenant
    computation: calculations.InvoiceComputation
    events_by_line: dict[tuple[str, datetime], list[dict]] = field(default_factory=dict)
    # Host-hours whose downtime credit was capped by the host's GPUs x its outage.
    capped: list[CappedHour] = field(default_factory=list)


# --- reading the month ------------------------------------------------------------------------


def _grouped_usage_sql(*, some_tenants: bool) -> str:
    usage, rate = UsageRecord._meta.db_table, Rate._meta.db_table
    tenants = "AND u.tenant_id = ANY(%(tenant_ids)s)" if some_tenants else ""
    # The rate in force at the hour, as `calculations.rate_for` picks it (a card whose periods
    # overlap is refused by the calculations before anything is priced). The span of hours is
    # only wanted where no rate prices them. A record is on the hour when it is on a UTC hour
    # (date_bin from an origin on one: plain arithmetic on the timestamp, where date_trunc
    # works through the session's time zone and took a sixth of the statement's time).
    return f"""
        SELECT u.tenant_id, u.resource, r.valid_from, SUM(u.unit_seconds),
               MIN(u.hour) FILTER (WHERE r.valid_from IS NULL),
               MAX(u.hour) FILTER (WHERE r.valid_from IS NULL),
               BOOL_AND(u.hour = date_bin('1 hour', u.hour,
                                          TIMESTAMPTZ '2000-01-01 00:00:00+00'))
        FROM {usage} u
        LEFT JOIN {rate} r ON r.resource = u.resource AND r.valid_from <= u.hour
             AND (r.valid_to IS NULL OR r.valid_to > u.hour)
        WHERE u.source = %(source)s AND u.hour >= %(start)s AND u.hour < %(end)s {tenants}
        GROUP BY u.tenant_id, u.resource, r.valid_from
    """  # noqa: S608 (table names from the models)


def _known(resource: str) -> bool:
    try:
        resource_classes.parse(resource)
    except resource_classes.UnknownResourceClass:
        return False
    return True


def grouped_usage(
    *, start: datetime, end: datetime, tenant_ids: Iterable[int] | None = None
) -> tuple[dict[int, list[calculations.UsageAmount]], set[int]]:
    """Per tenant, its allocated usage in [start, end) summed per resource class and rate
    period, as amounts the calculations price like the hours they sum; and the tenants whose
    hours must be read one by one after all (a record not on the hour, which the calculations
    refuse; a class outside the vocabulary that a rate prices, which they show unpriced over
    its first to last hour)."""
    params: dict[str, Any] = {"source": ALLOCATED, "start": start, "end": end}
    if tenant_ids is not None:
        params["tenant_ids"] = list(tenant_ids)
    with connection.cursor() as cursor:
        cursor.execute(_grouped_usage_sql(some_tenants=tenant_ids is not None), params)
        rows = cursor.fetchall()
    amounts: dict[int, list[calculations.UsageAmount]] = {}
    hourly: set[int] = set()
    for tenant_id, resource, rate_from, seconds, first, last, on_the_hour in rows:
        group = amounts.setdefault(tenant_id, [])
        if not on_the_hour or (rate_from is not None and not _known(resource)):
            hourly.add(tenant_id)
        elif rate_from is None:
            group.append(calculations.UsageAmount(resource, first, int(seconds)))
            if last != first:
                group.append(calculations.UsageAmount(resource, last, 0))
        else:
            # Any hour of the rate's period within the invoice's prices the group alike.
            group.append(calculations.UsageAmount(resource, max(rate_from, start), int(seconds)))
    return amounts, hourly


def _tenants_with_downtime_credit(
    start: datetime, end: datetime, tenant_ids: Iterable[int] | None
) -> set[int]:
    """The tenants whose GPU time DCGM measured on a host while it had an open critical event
    in [start, end): the only ones a downtime credit may be due to."""
    hosts = (
        HealthEvent.objects.filter(severity=Severity.CRITICAL, opened_at__lt=end)
        .filter(Q(resolved_at__isnull=True) | Q(resolved_at__gt=start))
        .values("node__hostname")
    )
    measured = UsageRecord.objects.filter(
        source=MEASURED, hour__gte=start, hour__lt=end, unit_seconds__gt=0, hostname__in=hosts
    ).exclude(hostname="")
    if tenant_ids is not None:
        measured = measured.filter(tenant_id__in=list(tenant_ids))
    return set(measured.values_list("tenant_id", flat=True).distinct().order_by())


def _tax_percent() -> Decimal | None:
    tax = getattr(settings, "BILLING_TAX_PERCENT", None)
    return None if tax in (None, "") else Decimal(tax)


@dataclass(frozen=True)
class MonthUsage:
    """What the drafts of [start, end) are computed from."""

    start: datetime
    end: datetime
    rates: list[calculations.Rate]
    amounts: dict[int, list[calculations.UsageAmount]]
    hourly: set[int]  # tenants whose amounts are hour by hour (downtime credit, odd hours)


def month_usage(
    *, start: datetime, end: datetime, tenant_ids: Iterable[int] | None = None
) -> MonthUsage:
    """The usage of every tenant (or of `tenant_ids`) in [start, end), in two to four queries.
    Elsewhere than on PostgreSQL (the demo's SQLite), every tenant's hours one by one."""
    ids = None if tenant_ids is None else list(tenant_ids)
    if connection.vendor != "postgresql":
        if ids is None:
            ids = list(
                UsageRecord.objects.filter(source=ALLOCATED, hour__gte=start, hour__lt=end)
                .values_list("tenant_id", flat=True)
                .distinct()
                .order_by()
            )
        amounts = usage_amounts(tenant_ids=ids, start=start, end=end)
        return MonthUsage(start, end, rate_card(start=start, end=end), amounts, set(ids))
    amounts, hourly = grouped_usage(start=start, end=end, tenant_ids=ids)
    hourly |= _tenants_with_downtime_credit(start, end, ids)
    if hourly:
        amounts |= usage_amounts(tenant_ids=hourly, start=start, end=end)
    return MonthUsage(start, end, rate_card(start=start, end=end), amounts, hourly)


def _rates_of(
    amounts: list[calculations.UsageAmount], by_class: dict[str, list[calculations.Rate]]
) -> list[calculations.Rate]:
    return [rate for resource in {a.resource for a in amounts} for rate in by_class[resource]]


def compute_drafts(
    *, tenants: list[Tenant], accounts: dict[int, BillingAccount], usage: MonthUsage
) -> tuple[list[Draft], dict[int, RuleViolation]]:
    """Each tenant's month as a draft, or why it cannot be computed."""
    start, end, rates = usage.start, usage.end, usage.rates
    tax_percent = _tax_percent()
    # The card is checked once here rather than once per tenant; each tenant is priced against
    # the rates of its own classes (`rate_for` looks at no other). A card with a fault is given
    # whole, so that every invoice is refused as before, with the same error.
    try:
        calculations.check_rates(rates, known_classes_only=False)
        by_class: dict[str, list[calculations.Rate]] | None = defaultdict(list)
        for rate in rates:
            by_class[rate.resource].append(rate)
    except calculations.BillingError:
        by_class = None
    drafts: list[Draft] = []
    errors: dict[int, RuleViolation] = {}
    for tenant in tenants:
        amounts = usage.amounts.get(tenant.pk, [])
        try:
            credits, events_by_line, capped = (), {}, []
            if tenant.pk in usage.hourly:
                credits, events_by_line, capped = downtime_credit(
                    tenant_id=tenant.pk, start=start, end=end, rates=rates, usage=amounts
                )
            computation = calculations.invoice_lines(
                amounts,
                rates if by_class is None else _rates_of(amounts, by_class),
                period_start=start,
                period_end=end,
                discount_percent=accounts[tenant.pk].discount_percent,
                tax_percent=tax_percent,
                credits=credits,
            )
        except calculations.BillingError as error:
            errors[tenant.pk] = RuleViolation(
                f"The invoice of {tenant.name} for {start:%B %Y}: {error}"
            )
            continue
        drafts.append(Draft(tenant, computation, events_by_line, capped))
    return drafts, errors


# --- the billing accounts ---------------------------------------------------------------------


def lock_billing_accounts(tenant_ids: list[int]) -> dict[int, BillingAccount]:
    """The tenants' billing accounts (created for tenants never billed), row-locked in id order:
    one computation or issue per tenant at a time, taken before any invoice's lock."""

    def locked(ids: list[int]) -> dict[int, BillingAccount]:
        rows = BillingAccount.objects.select_for_update().filter(tenant_id__in=ids)
        return {account.tenant_id: account for account in rows.order_by("pk")}

    accounts = locked(tenant_ids)
    missing = [tenant_id for tenant_id in tenant_ids if tenant_id not in accounts]
    if missing:
        BillingAccount.objects.bulk_create(
            [BillingAccount(tenant_id=tenant_id) for tenant_id in missing], ignore_conflicts=True
        )
        accounts |= locked(missing)
    return accounts


# --- writing ----------------------------------------------------------------------------------


def _unpriced_json(usage: calculations.UnpricedUsage) -> dict[str, Any]:
    return {
        "resource": usage.resource,
        "label": usage.label,
        "reason": usage.reason,
        "period_start": usage.period_start.isoformat(),
        "period_end": usage.period_end.isoformat(),
        "unit_seconds": usage.unit_seconds,
        "quantity_hours": str(usage.quantity_hours),
    }


def _line_row(
    invoice: Invoice, position: int, line: calculations.InvoiceLine, events: list[dict]
) -> InvoiceLine:
    description = line.label if line.kind == "usage" else f"Downtime credit: {line.label}"
    return InvoiceLine(
        invoice=invoice,
        position=position,
        kind=line.kind,
        resource=line.resource,
        description=description[:200],
        period_start=line.period_start,
        period_end=line.period_end,
        unit_seconds=line.unit_seconds,
        quantity_hours=line.quantity_hours,
        quantity=line.quantity,
        unit=line.unit,
        unit_price=line.unit_price,
        amount=line.amount,
        events=events,
    )


def _fill(invoice: Invoice, draft: Draft, *, now: datetime) -> None:
    computation = draft.computation
    invoice.tenant_name = draft.tenant.name
    invoice.cost_center = draft.tenant.cost_center
    invoice.currency = settings.BILLING_CURRENCY
    invoice.discount_percent = computation.discount_percent
    invoice.tax_percent = computation.tax_percent
    invoice.subtotal = computation.subtotal
    invoice.discount = computation.discount
    invoice.tax = computation.tax
    invoice.total = computation.total
    invoice.unpriced = [_unpriced_json(usage) for usage in computation.unpriced]
    invoice.computed_at = now


def _lines(invoice: Invoice, draft: Draft) -> list[InvoiceLine]:
    computation = draft.computation
    rows = [
        _line_row(invoice, position, line, [])
        for position, line in enumerate(computation.lines, start=1)
    ]
    rows += [
        _line_row(
            invoice,
            position,
            line,
            draft.events_by_line.get((line.resource, line.period_start), []),
        )
        for position, line in enumerate(computation.credit_lines, start=len(rows) + 1)
    ]
    return rows


def totals(invoice: Invoice) -> dict[str, Any]:
    return {
        "subtotal": str(invoice.subtotal),
        "discount": str(invoice.discount),
        "tax": str(invoice.tax),
        "total": str(invoice.total),
        "unpriced": [item["resource"] for item in invoice.unpriced],
    }


def _audit_event(
    *, actor: Any | None, invoice: Invoice, tenant: Tenant, created: bool
) -> AuditEvent:
    """The event `core.audit.audit` records for a computed draft, built to be written in
    bulk with the others."""
    is_user = actor is not None and getattr(actor, "is_authenticated", False)
    return AuditEvent(
        actor=actor if is_user else None,
        actor_repr=actor.get_username() if is_user else "system",
        action="invoice.compute",
        object_type=Invoice._meta.label_lower,
        object_id=str(invoice.pk),
        object_repr=str(invoice)[:200],
        tenant_slug=tenant.slug,
        changes={"period": f"{invoice.period_start:%Y-%m}", "created": created, **totals(invoice)},
        request_id=current_request_id.get(),
    )


def _update_drafts(invoices: list[Invoice]) -> None:
    """Store the computed fields of locked drafts: one UPDATE per invoice, sent together
    (`bulk_update`'s CASE per field and row took over a second for a hundred invoices). Only a
    draft row is ever changed, as `InvoiceQuerySet.update` insists."""
    fields = [Invoice._meta.get_field(name) for name in COMPUTED_FIELDS]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    table = quote(Invoice._meta.db_table)
    sql = f"UPDATE {table} SET {assignments} WHERE id = %s AND status = %s"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.executemany(
            sql,
            [
                [
                    field.get_db_prep_save(getattr(invoice, field.attname), connection)
                    for field in fields
                ]
                + [invoice.pk, InvoiceStatus.DRAFT]
                for invoice in invoices
            ],
        )


def _credit_flags_replace(pairs: list[tuple[Invoice, Draft]]) -> None:
    """The drafts' capped downtime credits as metering flags, in place of those the tenants'
    earlier drafts of the month left (a month recomputed flags what it caps now)."""
    if not pairs:
        return
    now = timezone.now()
    MeteringFlag.objects.filter(
        kind=MeteringFlag.Kind.CREDIT_CAPPED,
        invoice_period__in={invoice.period_start for invoice, _ in pairs},
        tenant_id__in=[draft.tenant.pk for _, draft in pairs],
    ).delete()
    MeteringFlag.objects.bulk_create(
        [
            MeteringFlag(
                kind=MeteringFlag.Kind.CREDIT_CAPPED, hour=cap.hour, hostname=cap.hostname,
                tenant=draft.tenant, invoice_period=invoice.period_start, gpus=cap.gpus,
                capacity_seconds=cap.capacity_seconds, reported_seconds=cap.reported_seconds,
                kept_seconds=cap.kept_seconds, flagged_at=now,
            )
            for invoice, draft in pairs
            for cap in draft.capped
        ],
        batch_size=1000,
    )


def write_drafts(
    pairs: list[tuple[Invoice, Draft]], *, actor: Any | None, audited: bool = True
) -> None:
    """Store each draft in its (locked, or new) invoice: fields, lines in place of the old
    ones, one audit event each; in a handful of statements whatever the number of invoices."""
    now = timezone.now()
    created = {id(invoice) for invoice, _ in pairs if invoice.pk is None}
    for invoice, draft in pairs:
        _fill(invoice, draft, now=now)
    stored = [invoice for invoice, _ in pairs if invoice.pk is not None]
    if stored:
        _update_drafts(stored)
        InvoiceLine.objects.filter(invoice__in=[invoice.pk for invoice in stored]).delete()
    Invoice.objects.bulk_create(
        [invoice for invoice, _ in pairs if id(invoice) in created], batch_size=1000
    )
    InvoiceLine.objects.bulk_create(
        [row for invoice, draft in pairs for row in _lines(invoice, draft)], batch_size=1000
    )
    _credit_flags_replace(pairs)
    if audited:
        AuditEvent.objects.bulk_create(
            [
                _audit_event(
                    actor=actor,
                    invoice=invoice,
                    tenant=draft.tenant,
                    created=id(invoice) in created,
                )
                for invoice, draft in pairs
            ],
            batch_size=1000,
        )
