"""Money and time arithmetic shared by the calculations: exact until the one rounding.

Amounts are worked out as exact fractions (`fractions.Fraction`) and rounded once, to the cent
with ROUND_HALF_UP (ties away from zero), where an invoice line, a discount or a tax is fixed.
No float ever touches money: a float price is refused, not converted.
"""

from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

CENT = Decimal("0.01")
QUANTITY = Decimal("0.000001")
HOUR = timedelta(hours=1)
SECONDS_PER_HOUR = 3600


def exact(value: Decimal | int) -> Fraction:
    """`value` as an exact fraction; a float (or anything else) is refused."""
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise TypeError(f"Money and quantities are Decimal or int, not {type(value).__name__}.")
    if isinstance(value, Decimal) and not value.is_finite():
        raise ValueError(f"{value} is not a finite amount.")
    return Fraction(value)


def round_to(value: Fraction, step: Decimal) -> Decimal:
    """`value` rounded to a multiple of `step`, half away from zero, computed exactly."""
    units = Fraction(value) / Fraction(step)
    whole, remainder = divmod(abs(units.numerator), units.denominator)
    if 2 * remainder >= units.denominator:
        whole += 1
    sign = -1 if units < 0 else 1
    return (Decimal(sign * whole) * step).quantize(step, rounding=ROUND_HALF_UP)


def round_money(value: Fraction) -> Decimal:
    """The one rounding of an amount: to the cent, ROUND_HALF_UP."""
    return round_to(value, CENT)


def hours_quantity(unit_seconds: int) -> Decimal:
    """Unit-seconds as unit-hours for display, to 6 places (amounts use the exact seconds)."""
    return round_to(Fraction(unit_seconds, SECONDS_PER_HOUR), QUANTITY)


def require_aware(value: datetime, name: str) -> datetime:
    """`value` in UTC; a naive datetime is refused, since its hour boundaries are unknown."""
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, not {type(value).__name__}.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware (UTC), got naive {value.isoformat()}.")
    return value.astimezone(UTC)


def floor_hour(value: datetime) -> datetime:
    return value.replace(minute=0, second=0, microsecond=0)


def is_hour(value: datetime) -> bool:
    return value == floor_hour(value)


def seconds_between(start: datetime, end: datetime) -> int:
    """Whole seconds from `start` to `end` (both already truncated to the second)."""
    return (end - start) // timedelta(seconds=1)


def month_start(value: datetime) -> datetime:
    return value.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(value: datetime) -> datetime:
    start = month_start(value)
    if start.month == 12:
        return start.replace(year=start.year + 1, month=1)
    return start.replace(month=start.month + 1)


def hours_in_month(value: datetime) -> int:
    """The exact number of hours in the UTC calendar month holding `value` (672 to 744)."""
    start = month_start(value)
    return seconds_between(start, next_month(start)) // SECONDS_PER_HOUR
