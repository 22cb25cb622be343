"""Invoice lines: hourly usage priced at the rate in force, rounded once per line.

One line per resource class and rate period: a price change mid-month splits the class into two
lines, each priced at its own rate. A monthly (GiB-month) rate also splits at month ends, since
each month has its own number of hours. A line's amount is worked out exactly from the summed
unit-seconds and rounded once, to the cent, ROUND_HALF_UP; quantities are shown to 6 places
(unit-seconds / 3600) but never used to compute the amount.

Usage that has no price — an unknown resource class, or an hour no rate covers — is reported in
`unpriced` with its quantity, and never billed at zero silently.

Totals, each rounded once and added exactly, so that the lines, credits, discount and tax
always add up to the total to the cent:
    subtotal = Σ usage lines + Σ credit lines (credits are negative)
    discount = -round(subtotal * discount% / 100)
    tax      = round((subtotal + discount) * tax% / 100)
    total    = subtotal + discount + tax
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Literal, NamedTuple

from inventory import resource_classes

from .errors import BillingError
from .money import (
    HOUR,
    QUANTITY,
    SECONDS_PER_HOUR,
    exact,
    hours_in_month,
    hours_quantity,
    is_hour,
    month_start,
    next_month,
    require_aware,
    round_money,
    round_to,
)
from .rates import Rate, check_rates, rate_for

NO_RATE = "no rate in force"
UNKNOWN_CLASS = "unknown resource class"


class UsageAmount(NamedTuple):
    """Unit-seconds of one resource class within the UTC hour starting at `hour_start`."""

    resource: str
    hour_start: datetime
    unit_seconds: int


@dataclass(frozen=True)
class InvoiceLine:
    """One resource class over one rate period: quantities, the price quoted, the amount.

    The line's period is the part of the invoice period its rate was in force (and, for a
    monthly rate, the month). `unit_seconds` is exact; `quantity_hours` (unit-hours) and
    `quantity` (in the rate's unit: unit-hours, or unit-months for a monthly rate) are shown to
    6 places, ROUND_HALF_UP, and never used to compute `amount`. Credit lines are negative
    throughout.
    """

    kind: Literal["usage", "credit"]
    resource: str
    label: str
    period_start: datetime
    period_end: datetime
    unit_seconds: int
    quantity_hours: Decimal
    quantity: Decimal
    unit: str
    unit_price: Decimal
    amount: Decimal


@dataclass(frozen=True)
class UnpricedUsage:
    """Usage of one resource class that no rate prices, and why: shown, never billed."""

    resource: str
    label: str
    reason: str
    period_start: datetime
    period_end: datetime
    unit_seconds: int
    quantity_hours: Decimal


@dataclass(frozen=True)
class InvoiceComputation:
    """What an invoice for one tenant and period [period_start, period_end) comes to."""

    period_start: datetime
    period_end: datetime
    lines: tuple[InvoiceLine, ...]
    credit_lines: tuple[InvoiceLine, ...]
    unpriced: tuple[UnpricedUsage, ...]
    subtotal: Decimal
    discount_percent: Decimal
    discount: Decimal
    tax_percent: Decimal | None
    tax: Decimal
    total: Decimal


@dataclass(frozen=True)
class PricedUsage:
    """Priced lines and what could not be priced, before totals."""

    lines: tuple[InvoiceLine, ...]
    unpriced: tuple[UnpricedUsage, ...]


def class_label(resource: str) -> str:
    try:
        return resource_classes.parse(resource).label
    except resource_classes.UnknownResourceClass:
        return resource


def quantity_unit(resource: str, unit: str = "hour") -> str:
    """What a line's quantity counts, for a rate per `unit` (hour or month): GPU-hours, MIG
    instance-hours, HAMi compute unit-hours, GiB-months; unit-hours for an unknown class."""
    try:
        noun = resource_classes.parse(resource).unit_noun
    except resource_classes.UnknownResourceClass:
        noun = "unit"
    return f"{noun}-{unit}s"


# The order an invoice prints its lines in: whole GPUs, then their partitions, then the rest.
_KIND_ORDER = {"gpu": 0, "mig": 1, "hami": 2, "scalar": 3, "count": 4}


def class_order(resource: str) -> tuple[int, str]:
    """A sort key putting GPU classes first, then MIG, HAMi, CPU/memory/storage, workloads."""
    try:
        kind = resource_classes.parse(resource).kind
    except resource_classes.UnknownResourceClass:
        return (len(_KIND_ORDER), resource)
    return (_KIND_ORDER[kind], resource)


def _known(resource: str) -> bool:
    try:
        resource_classes.parse(resource)
    except resource_classes.UnknownResourceClass:
        return False
    return True


def check_period(*, period_start: datetime, period_end: datetime) -> tuple[datetime, datetime]:
    start = require_aware(period_start, "period_start")
    end = require_aware(period_end, "period_end")
    if not (is_hour(start) and is_hour(end)):
        raise BillingError("An invoice period starts and ends on a whole UTC hour.")
    if end <= start:
        raise BillingError("An invoice period ends after it starts.")
    return start, end


def _checked(amount: UsageAmount, *, period: tuple[datetime, datetime]) -> UsageAmount:
    resource, hour, seconds = amount
    start, end = period
    hour = require_aware(hour, "hour_start")
    if not is_hour(hour):
        raise BillingError(f"Usage bucket {hour.isoformat()} does not start on the hour.")
    if not start <= hour < end:
        raise BillingError(f"Usage at {hour.isoformat()} is outside the invoice period.")
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
        raise BillingError(f"Unit-seconds must be a whole number ≥ 0, got {seconds!r}.")
    return UsageAmount(resource, hour, seconds)


def _line(
    *,
    kind: Literal["usage", "credit"],
    resource: str,
    rate: Rate,
    month: datetime | None,
    seconds: int,
    period: tuple[datetime, datetime],
) -> InvoiceLine:
    sign = -1 if kind == "credit" else 1
    line_start = max(period[0], rate.valid_from)
    line_end = period[1] if rate.valid_to is None else min(period[1], rate.valid_to)
    hours = Fraction(sign * seconds, SECONDS_PER_HOUR)
    quantity = hours
    if month is not None:
        line_start, line_end = max(line_start, month), min(line_end, next_month(month))
        quantity = hours / hours_in_month(month)
    return InvoiceLine(
        kind=kind,
        resource=resource,
        label=class_label(resource),
        period_start=line_start,
        period_end=line_end,
        unit_seconds=sign * seconds,
        quantity_hours=hours_quantity(sign * seconds),
        quantity=round_to(quantity, QUANTITY),
        unit=rate.unit,
        unit_price=rate.unit_price,
        # The line's one rounding, from its exact unit-seconds (never from the shown quantity).
        amount=round_money(hours * rate.hourly_price(at=month or line_start)),
    )


def priced_usage(
    usage: Iterable[UsageAmount],
    rates: Iterable[Rate],
    *,
    period_start: datetime,
    period_end: datetime,
    kind: Literal["usage", "credit"] = "usage",
) -> PricedUsage:
    """Usage grouped into one line per class and rate period (and month, for monthly rates)."""
    rates = list(rates)
    check_rates(rates, known_classes_only=False)
    period = check_period(period_start=period_start, period_end=period_end)
    priced: dict[tuple[str, Rate, datetime | None], int] = defaultdict(int)
    unpriced: dict[tuple[str, str], tuple[datetime, datetime, int]] = {}
    for amount in usage:
        resource, hour, seconds = _checked(amount, period=period)
        known = _known(resource)
        rate = rate_for(rates, resource=resource, at=hour) if known else None
        if rate is None:
            reason = NO_RATE if known else UNKNOWN_CLASS
            first, last, total = unpriced.get((resource, reason), (hour, hour, 0))
            unpriced[resource, reason] = (min(first, hour), max(last, hour), total + seconds)
            continue
        month = month_start(hour) if rate.unit == "month" else None
        priced[resource, rate, month] += seconds
    lines = [
        _line(kind=kind, resource=resource, rate=rate, month=month, seconds=seconds, period=period)
        for (resource, rate, month), seconds in priced.items()
        if seconds
    ]
    lines.sort(key=lambda line: (line.resource, line.period_start))
    return PricedUsage(
        lines=tuple(lines),
        unpriced=tuple(
            UnpricedUsage(
                resource=resource,
                label=class_label(resource),
                reason=reason,
                period_start=first,
                period_end=last + HOUR,
                unit_seconds=seconds,
                quantity_hours=hours_quantity(seconds),
            )
            for (resource, reason), (first, last, seconds) in sorted(unpriced.items())
            if seconds
        ),
    )


def _percent(value: Decimal | int, name: str, *, most: int | None = None) -> Fraction:
    percent = exact(value)
    if percent < 0 or (most is not None and percent > most):
        bound = f" and {most}" if most is not None else ""
        raise BillingError(f"{name} must be between 0{bound}, got {value}.")
    return percent


def invoice_lines(
    usage: Iterable[UsageAmount],
    rates: Iterable[Rate],
    *,
    period_start: datetime,
    period_end: datetime,
    discount_percent: Decimal = Decimal(0),
    tax_percent: Decimal | None = None,
    credits: Iterable[InvoiceLine] = (),
) -> InvoiceComputation:
    """The invoice for `usage` over [period_start, period_end): lines, unpriced usage, totals.

    `credits` are credit lines (e.g. from `credit_lines`), listed apart and netted into the
    subtotal. `tax_percent=None` means no tax is charged (and none shown).
    """
    discount_share = _percent(discount_percent, "discount_percent", most=100) / 100
    tax_share = None if tax_percent is None else _percent(tax_percent, "tax_percent") / 100
    start, end = check_period(period_start=period_start, period_end=period_end)
    priced = priced_usage(usage, rates, period_start=start, period_end=end)
    credit_lines = tuple(credits)
    if any(line.kind != "credit" or line.amount > 0 for line in credit_lines):
        raise BillingError("Credits are credit lines with amounts of zero or less.")
    subtotal = sum((line.amount for line in priced.lines + credit_lines), Decimal("0.00"))
    if subtotal < 0:
        raise BillingError(f"Credits ({subtotal}) exceed the usage billed: check the metering.")
    # Discount and tax are each rounded once, on amounts that are already whole cents, so the
    # parts add up to the total exactly.
    discount = -round_money(Fraction(subtotal) * discount_share)
    taxable = Fraction(subtotal + discount)
    tax = Decimal("0.00") if tax_share is None else round_money(taxable * tax_share)
    return InvoiceComputation(
        period_start=start,
        period_end=end,
        lines=priced.lines,
        credit_lines=credit_lines,
        unpriced=priced.unpriced,
        subtotal=subtotal,
        discount_percent=Decimal(discount_percent),
        discount=discount,
        tax_percent=None if tax_percent is None else Decimal(tax_percent),
        tax=tax,
        total=subtotal + discount + tax,
    )
