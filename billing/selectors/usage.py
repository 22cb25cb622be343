"""Usage as the calculations read it: unit-seconds per (resource class, hour), and what a
tenant's month has cost so far."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Sum

from .. import calculations
from ..calculations.money import month_start, next_month
from ..models import UsageRecord
from .rates import rate_card


def usage_amounts(
    *,
    tenant_ids: Iterable[int],
    start: datetime,
    end: datetime,
    source: str = UsageRecord.Source.ALLOCATED,
) -> dict[int, list[calculations.UsageAmount]]:
    """Unit-seconds per tenant, resource class and hour in [start, end), summed in SQL."""
    rows = (
        UsageRecord.objects.filter(
            tenant_id__in=list(tenant_ids), source=source, hour__gte=start, hour__lt=end
        )
        .values("tenant_id", "resource", "hour")
        .annotate(seconds=Sum("unit_seconds"))
        .order_by()
    )
    amounts: dict[int, list[calculations.UsageAmount]] = {}
    for row in rows:
        amounts.setdefault(row["tenant_id"], []).append(
            calculations.UsageAmount(row["resource"], row["hour"], int(row["seconds"]))
        )
    return amounts


@dataclass(frozen=True)
class MonthSpend:
    """What a tenant's allocated usage of the month so far comes to, priced at the card."""

    month_start: datetime
    month_end: datetime
    computation: calculations.InvoiceComputation

    @property
    def spent(self) -> Decimal:
        return self.computation.subtotal


def month_spend(*, tenant_ids: Iterable[int], now: datetime) -> dict[int, MonthSpend]:
    """Each tenant's spend this month before discount and tax (usage metered up to `now`)."""
    start = month_start(now)
    end = next_month(start)
    rates = rate_card(start=start, end=end)
    tenant_ids = list(tenant_ids)
    amounts = usage_amounts(tenant_ids=tenant_ids, start=start, end=end)
    return {
        tenant_id: MonthSpend(
            month_start=start,
            month_end=end,
            computation=calculations.invoice_lines(
                amounts.get(tenant_id, []), rates, period_start=start, period_end=end
            ),
        )
        for tenant_id in tenant_ids
    }
