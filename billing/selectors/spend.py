"""What tenants see of cost: their month so far, its forecast against their budget, their
invoices, and the price per hour of what a launch or a quota request asks for.

Reads only, for one tenant the caller has already found through the access rules
(`tenants.access.tenant_get_for_user`: another tenant's is a 404 before anything here runs).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from django.conf import settings
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from inventory import resource_classes
from tenants.models import Tenant
from tenants.workloads.models import HOLDING, Workload

from .. import calculations
from ..calculations.invoicing import class_label
from ..calculations.money import (
    HOUR,
    SECONDS_PER_HOUR,
    floor_hour,
    month_start,
    next_month,
    round_money,
    round_to,
)
from ..models import (
    BillingAccount,
    BudgetAlert,
    Invoice,
    InvoiceStatus,
    MeteringWindow,
    UsageRecord,
    WindowStatus,
)
from .invoices import with_stored_file
from .rates import rate_card
from .usage import usage_amounts

WARN_PERCENT = 80
# The chart draws the budget only when it is at most this many times its highest point.
BUDGET_SCALE = 2
# A quote's month: "per 30-day month", whatever the calendar month holds.
QUOTE_MONTH_HOURS = 720
PRICE_PLACES = Decimal("0.0001")


@dataclass(frozen=True)
class SpendLine:
    """One resource class of the month so far (summed over its rate periods)."""

    resource: str
    label: str
    hours: Decimal
    amount: Decimal
    unit_prices: tuple[tuple[Decimal, str], ...]  # (price, unit) of each rate period

    @property
    def prices_shown(self) -> str:
        return ", ".join(f"{_shown(price)}/{unit}" for price, unit in self.unit_prices)


@dataclass(frozen=True)
class DayPoint:
    day: date
    spent: Decimal | None  # cumulative; None for days still ahead
    forecast: Decimal | None  # from today on (None for the days before)


@dataclass(frozen=True)
class TenantSpend:
    """A tenant's month so far, priced at the rate card (before discount and tax)."""

    tenant: Tenant
    now: datetime
    month_start: datetime
    month_end: datetime
    currency: str
    lines: tuple[SpendLine, ...]
    unpriced: tuple[calculations.UnpricedUsage, ...]
    spent: Decimal
    forecast: Decimal
    budget: Decimal  # 0: no budget set
    discount_percent: Decimal
    alerts: tuple[BudgetAlert, ...]
    days: tuple[DayPoint, ...]
    has_usage: bool
    has_rates: bool
    # Set when the rate card cannot price the month (e.g. two prices for one hour): shown
    # instead of a wrong amount, until the platform team fixes the card.
    problem: str = ""
    # The end of the last metered hour ("as of"); None before any hour of the month is metered.
    metered_through: datetime | None = None
    # What the workloads running now held since then, priced at the current rate card: an
    # estimate until the meter reaches those hours.
    estimate: Decimal = Decimal("0.00")
    running: int = 0  # how many workloads the estimate counts
    per_hour_now: Decimal = Decimal("0.00")  # what they cost per hour now, at the card

    @property
    def so_far(self) -> Decimal:
        """This month's figure: what was metered, and the estimate since."""
        return self.spent + self.estimate

    @property
    def budget_percent(self) -> Decimal | None:
        if not self.budget:
            return None
        return round_to(Fraction(self.so_far) * 100 / Fraction(self.budget), Decimal("0.1"))

    @property
    def forecast_percent(self) -> Decimal | None:
        if not self.budget:
            return None
        return round_to(Fraction(self.forecast) * 100 / Fraction(self.budget), Decimal("0.1"))

    @property
    def budget_state(self) -> str:
        """none, ok (below 80 %), warning (80 % reached) or over (100 % reached)."""
        percent = self.budget_percent
        if percent is None:
            return "none"
        if percent >= 100:
            return "over"
        if percent >= WARN_PERCENT:
            return "warning"
        return "ok"

    @property
    def budget_color(self) -> str:
        return {"over": "danger", "warning": "warning", "ok": "success"}.get(
            self.budget_state, "secondary"
        )

    @property
    def bar_percent(self) -> Decimal:
        return min(self.budget_percent or Decimal(0), Decimal(100))

    @property
    def remaining(self) -> Decimal | None:
        return self.budget - self.so_far if self.budget else None

    @property
    def over_by(self) -> Decimal:
        return max(self.so_far - self.budget, Decimal("0.00")) if self.budget else Decimal("0.00")

    @property
    def forecast_over_budget(self) -> bool:
        return bool(self.budget) and self.forecast > self.budget

    @property
    def budget_on_chart(self) -> bool:
        """Whether the budget is drawn on the chart: only when it is within reach of the
        spend (at most BUDGET_SCALE times the highest point), so that a budget far above the
        spend never flattens the spend line; otherwise the page says where it is in words."""
        if not self.budget:
            return False
        highest = max([self.forecast, self.so_far, *(p.spent or 0 for p in self.days)])
        return self.budget <= highest * BUDGET_SCALE

    def chart(self) -> dict:
        """The daily series for Chart.js: cumulative spend (today's with the estimate), the
        forecast from today to month end, and the budget when it is on the chart's scale."""
        budget = self.budget if self.budget_on_chart else None
        return {
            "labels": [point.day.isoformat() for point in self.days],
            "spent": [None if p.spent is None else str(p.spent) for p in self.days],
            "forecast": [None if p.forecast is None else str(p.forecast) for p in self.days],
            "budget": str(budget) if budget is not None else None,
            "budget_label": f"Budget ({self.currency} {budget:,.2f})" if budget else "",
            "currency": self.currency,
        }


def billing_account_of(*, tenant: Tenant) -> BillingAccount | None:
    """The tenant's billing account, or None before anyone set a budget (nothing is created:
    this is a read)."""
    return BillingAccount.objects.filter(tenant=tenant).first()


def _lines_by_class(lines) -> tuple[SpendLine, ...]:
    grouped: dict[str, list] = defaultdict(list)
    for line in lines:
        grouped[line.resource].append(line)
    return tuple(
        SpendLine(
            resource=resource,
            label=parts[0].label,
            hours=sum((p.quantity_hours for p in parts), Decimal(0)),
            amount=sum((p.amount for p in parts), Decimal("0.00")),
            unit_prices=tuple((p.unit_price, p.unit) for p in parts),
        )
        for resource, parts in sorted(grouped.items(), key=lambda item: -item[1][0].amount)
    )


def _daily(
    usage: list[calculations.UsageAmount],
    rates: list[calculations.Rate],
    *,
    now: datetime,
    start: datetime,
    end: datetime,
    spent: Decimal,
    forecast: Decimal,
) -> tuple[DayPoint, ...]:
    """Cumulative spend at the end of each day so far, worked out exactly per hour and rounded
    once per point (today's is the month's figure so far: metered, rounded per line as invoices
    are, and the estimate since); the forecast runs from today's figure to month end."""
    by_day: dict[date, Fraction] = defaultdict(Fraction)
    for resource, hour, seconds in usage:
        rate = calculations.rate_for(rates, resource=resource, at=hour)
        if rate is not None:
            by_day[hour.date()] += Fraction(seconds, SECONDS_PER_HOUR) * rate.hourly_price(at=hour)
    days = (end - start).days
    today = min(now, end - timedelta(microseconds=1)).date()
    left = max(int((end - now).total_seconds()), 1)
    points, running = [], Fraction(0)
    for offset in range(days):
        day = (start + timedelta(days=offset)).date()
        running += by_day.get(day, Fraction(0))
        day_end = start + timedelta(days=offset + 1)
        forecast_then = None
        if day < today:
            shown = round_money(running)
        else:
            shown = spent if day == today else None
            share = Fraction(max(0, min(int((day_end - now).total_seconds()), left)), left)
            forecast_then = round_money(Fraction(spent) + Fraction(forecast - spent) * share)
        points.append(DayPoint(day=day, spent=shown, forecast=forecast_then))
    return tuple(points)


def _metered_through(usage: list[calculations.UsageAmount], *, start: datetime,
                     now: datetime) -> datetime | None:
    """The end of the month's last metered hour: the latest hour the allocated meter finished
    (one query), or the tenant's last hour of usage if that is later."""
    last = (
        MeteringWindow.objects.filter(
            source=UsageRecord.Source.ALLOCATED, status=WindowStatus.DONE,
            hour__gte=start, hour__lt=now,
        )
        .order_by("-hour")
        .values_list("hour", flat=True)
        .first()
    )
    ends = [hour + HOUR for hour in (last, *(h for _, h, _ in usage)) if hour is not None]
    return min(max(ends), now) if ends else None


@dataclass(frozen=True)
class _Estimate:
    amount: Decimal
    running: int
    per_hour: Fraction = Fraction(0)  # exact


def _estimate_since(
    *, tenant: Tenant, rates: list[calculations.Rate], since: datetime, now: datetime
) -> _Estimate:
    """What the tenant's running workloads (ready once, not deleted: billed, as the meter
    bills them) held from `since` (or from when each first became ready) to `now`, at the rate
    card of this hour. One query."""
    hour = floor_hour(now)
    exact_total, per_hour, running = Fraction(0), Fraction(0), 0
    rows = Workload.objects.filter(
        tenant=tenant, status__in=HOLDING, ready_at__isnull=False
    ).values_list("demand", "ready_at")
    for demand, ready_at in rows:
        running += 1
        seconds = max(0, int((now - max(since, ready_at)).total_seconds()))
        for resource, units in (demand if isinstance(demand, dict) else {}).items():
            if str(resource).startswith("count:") or type(units) is not int or units <= 0:
                continue
            rate = calculations.rate_for(rates, resource=resource, at=hour)
            if rate is None:
                continue  # no price: never billed at zero, and not guessed at here
            price = rate.hourly_price(at=hour) * units
            per_hour += price
            exact_total += price * Fraction(seconds, SECONDS_PER_HOUR)
    return _Estimate(round_money(exact_total), running, per_hour)


def tenant_spend(*, tenant: Tenant, now: datetime) -> TenantSpend:
    """The tenant's spend this month (usage metered up to `now`), its forecast to month end at
    the run-rate so far, its budget and the alerts already sent. A handful of queries,
    whatever the month holds (usage is summed per hour in SQL)."""
    start = month_start(now)
    end = next_month(start)
    rates = rate_card(start=start, end=end)
    usage = usage_amounts(tenant_ids=[tenant.pk], start=start, end=end).get(tenant.pk, [])
    try:
        computation = calculations.invoice_lines(
            usage, rates, period_start=start, period_end=end
        )
    except calculations.BillingError as exc:
        computation, problem = None, str(exc)
    else:
        problem = ""
    spent = computation.subtotal if computation else Decimal("0.00")
    metered_through = _metered_through(usage, start=start, now=now)
    estimate = (
        _estimate_since(tenant=tenant, rates=rates, since=metered_through or start, now=now)
        if computation else _Estimate(Decimal("0.00"), 0)
    )
    so_far = spent + estimate.amount
    # At the rate seen so far, or what runs now kept running to month end, whichever is more:
    # a launch raises the forecast at once.
    hours_left = Fraction(int((end - now).total_seconds()), SECONDS_PER_HOUR)
    forecast = max(
        calculations.month_forecast(so_far, now=now, month_start=start, month_end=end),
        round_money(Fraction(so_far) + estimate.per_hour * hours_left),
    )
    account = billing_account_of(tenant=tenant)
    alerts = BudgetAlert.objects.filter(tenant=tenant, month=start.date()).order_by("threshold")
    return TenantSpend(
        tenant=tenant,
        now=now,
        month_start=start,
        month_end=end,
        currency=settings.BILLING_CURRENCY,
        lines=_lines_by_class(computation.lines) if computation else (),
        unpriced=computation.unpriced if computation else (),
        spent=spent,
        forecast=forecast,
        budget=account.monthly_budget if account else Decimal("0"),
        discount_percent=account.discount_percent if account else Decimal("0"),
        alerts=tuple(alerts),
        days=_daily(usage, rates, now=now, start=start, end=end, spent=so_far,
                    forecast=forecast)
        if computation else (),
        has_usage=bool(usage) or bool(estimate.running),
        has_rates=bool(rates),
        problem=problem,
        metered_through=metered_through,
        estimate=estimate.amount,
        running=estimate.running,
        per_hour_now=round_to(estimate.per_hour, PRICE_PLACES),
    )


# --- invoices -----------------------------------------------------------------------------------

TENANT_INVOICE_STATUSES = (InvoiceStatus.ISSUED, InvoiceStatus.PAID, InvoiceStatus.VOID)


def tenant_invoices(*, tenant: Tenant) -> QuerySet[Invoice]:
    """The tenant's invoices as it may see them: issued, paid or void (never a draft)."""
    return Invoice.objects.filter(
        tenant=tenant, status__in=TENANT_INVOICE_STATUSES
    ).select_related("tenant").order_by(
        "-period_start", "-id"
    )


def tenant_invoice_get(*, tenant: Tenant, invoice_id: int, fmt: str | None = None) -> Invoice:
    """One of the tenant's invoices; a draft, or another tenant's, is a 404. With `fmt`, read
    with its kept file of that format (`invoices.with_stored_file`)."""
    invoices = tenant_invoices(tenant=tenant)
    if fmt is not None:
        invoices = with_stored_file(invoices, fmt=fmt)
    return get_object_or_404(invoices, pk=invoice_id)


# --- quotes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuoteLine:
    """One resource class of a quote: how much, at which price per hour, or why no price."""

    resource: str
    label: str
    amount: int
    status: str  # priced | no_rate | unknown
    unit_price_per_hour: Decimal | None = None
    per_hour: Decimal | None = None

    @property
    def priced(self) -> bool:
        return self.status == "priced"

    @property
    def per_hour_shown(self) -> str:
        return _shown(self.per_hour)

    @property
    def unit_price_shown(self) -> str:
        return _shown(self.unit_price_per_hour)


def _shown(value: Decimal | None) -> str:
    """To the cent, or to 4 places where a cent would hide it (a GiB of memory)."""
    if value is None:
        return ""
    whole, _, places = f"{value:,.4f}".partition(".")
    return f"{whole}.{places.rstrip('0').ljust(2, '0')}"


@dataclass(frozen=True)
class Quote:
    """What holding `lines` costs per hour (and per 30-day month) at the rate card of `at`."""

    at: datetime
    currency: str
    lines: tuple[QuoteLine, ...]
    per_hour: Decimal
    per_month: Decimal
    not_billed: tuple[str, ...] = field(default=())  # counted, never billed (count:<kind>)

    @property
    def complete(self) -> bool:
        return all(line.priced for line in self.lines)

    @property
    def per_hour_shown(self) -> str:
        """As the lines are shown (to the cent, or 4 places), so that they add up to it."""
        return _shown(self.per_hour)

    @property
    def missing(self) -> tuple[QuoteLine, ...]:
        return tuple(line for line in self.lines if not line.priced)


def quote_demand(*, demand: Mapping[str, int], at: datetime) -> Quote:
    """The price per hour of holding `demand` (resource class → units) at the card in force at
    `at`. A monthly (GiB-month) price is spread over that month's hours, as invoices do; a class
    with no price says so (never zero); workload counts are not billed and are listed apart."""
    hour = floor_hour(at)
    rates = rate_card(start=hour, end=hour + timedelta(hours=1))
    lines, not_billed = [], []
    for resource, amount in demand.items():
        amount = int(amount)
        if amount <= 0:
            continue
        try:
            kind = resource_classes.parse(resource).kind
        except resource_classes.UnknownResourceClass:
            lines.append(QuoteLine(resource, resource, amount, "unknown"))
            continue
        if kind == "count":
            not_billed.append(class_label(resource))
            continue
        rate = calculations.rate_for(rates, resource=resource, at=hour)
        if rate is None:
            lines.append(QuoteLine(resource, class_label(resource), amount, "no_rate"))
            continue
        unit_hour = rate.hourly_price(at=hour)
        lines.append(
            QuoteLine(
                resource,
                class_label(resource),
                amount,
                "priced",
                unit_price_per_hour=round_to(unit_hour, Decimal("0.000001")),
                per_hour=round_to(unit_hour * amount, PRICE_PLACES),
            )
        )
    lines.sort(key=lambda line: (not line.priced, -(line.per_hour or 0), line.resource))
    # Each line is rounded once, as shown; the total is their sum, so the lines add up to it.
    per_hour = sum((line.per_hour for line in lines if line.priced), Decimal(0))
    return Quote(
        at=hour,
        currency=settings.BILLING_CURRENCY,
        lines=tuple(lines),
        per_hour=per_hour,
        per_month=round_money(Fraction(per_hour) * QUOTE_MONTH_HOURS),
        not_billed=tuple(not_billed),
    )

