"""Rate cards: the price of one unit of a resource class, over a period of validity.

Every class is priced per unit-hour (`unit="hour"`), except where the card quotes a unit-month
(`unit="month"`, the usual way to quote storage: a price per GiB-month). A monthly price is
turned into an hourly one with the exact number of hours of the UTC calendar month the usage
falls in: 720 hours in a 30-day month, 744 in a 31-day one, 672 or 696 in February. So one
GiB held for a whole month costs exactly the quoted price, whatever the month's length.

A rate is valid over [valid_from, valid_to), on whole UTC hours, so that every hourly usage
bucket has at most one price.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise
from typing import Literal

from inventory import resource_classes

from .errors import RateCardError
from .money import exact, hours_in_month, is_hour, require_aware

RATE_UNITS = ("hour", "month")


@dataclass(frozen=True)
class Rate:
    """The price of one unit-hour (or unit-month) of `resource` from `valid_from` until
    `valid_to` (None: until further notice)."""

    resource: str
    unit_price: Decimal
    valid_from: datetime
    valid_to: datetime | None
    unit: Literal["hour", "month"] = "hour"

    def covers(self, at: datetime) -> bool:
        return self.valid_from <= at and (self.valid_to is None or at < self.valid_to)

    def hourly_price(self, *, at: datetime) -> Fraction:
        """The exact price of one unit-hour at `at` (a monthly price over that month's hours)."""
        price = exact(self.unit_price)
        if self.unit == "month":
            return price / hours_in_month(require_aware(at, "at"))
        return price


def rate_for(rates: Iterable[Rate], *, resource: str, at: datetime) -> Rate | None:
    """The rate in force for `resource` at `at`, or None when the card has no price for it."""
    at = require_aware(at, "at")
    for rate in rates:
        if rate.resource == resource and rate.covers(at):
            return rate
    return None


def _period(rate: Rate) -> str:
    end = "open end" if rate.valid_to is None else rate.valid_to.isoformat()
    return f"{rate.valid_from.isoformat()} to {end}"


def _date_problems(rate: Rate) -> list[str]:
    problems = []
    for name, value in (("valid_from", rate.valid_from), ("valid_to", rate.valid_to)):
        if value is None and name == "valid_to":
            continue
        try:
            if not is_hour(require_aware(value, name)):
                problems.append(f"{rate.resource}: {name} {value.isoformat()} is not on the hour")
        except (TypeError, ValueError) as error:
            problems.append(f"{rate.resource}: {error}")
    if not problems and rate.valid_to is not None and rate.valid_to <= rate.valid_from:
        problems.append(f"{rate.resource}: valid_to is not after valid_from ({_period(rate)})")
    return problems


def _price_problems(rate: Rate, *, known_classes_only: bool) -> list[str]:
    problems = []
    if known_classes_only:
        try:
            resource_classes.parse(rate.resource)
        except resource_classes.UnknownResourceClass:
            problems.append(f"{rate.resource!r} is not a known resource class")
    if rate.unit not in RATE_UNITS:
        problems.append(f"{rate.resource}: unit must be 'hour' or 'month', not {rate.unit!r}")
    try:
        if exact(rate.unit_price) < 0:
            problems.append(f"{rate.resource}: negative price {rate.unit_price}")
    except (TypeError, ValueError) as error:
        problems.append(f"{rate.resource}: {error}")
    return problems


def _overlaps(rates: Sequence[Rate]) -> list[str]:
    by_resource: dict[str, list[Rate]] = defaultdict(list)
    for rate in rates:
        by_resource[rate.resource].append(rate)
    problems = []
    for resource, periods in by_resource.items():
        periods.sort(key=lambda rate: rate.valid_from)
        for earlier, later in pairwise(periods):
            if earlier.valid_to is None or later.valid_from < earlier.valid_to:
                problems.append(
                    f"{resource}: periods overlap ({_period(earlier)} and {_period(later)})"
                )
    return problems


def check_rates(rates: Iterable[Rate], *, known_classes_only: bool = True) -> None:
    """Refuse a card with overlapping periods for one class, a negative or float price, a
    period that ends before it starts or off the hour, or an unknown resource class.

    Invoicing checks with `known_classes_only=False`: a rate whose class has since left the
    vocabulary is then merely unused, not a reason to stop every invoice.
    """
    problems: list[str] = []
    dated: list[Rate] = []
    for rate in rates:
        problems += _price_problems(rate, known_classes_only=known_classes_only)
        date_problems = _date_problems(rate)
        problems += date_problems
        if not date_problems:
            dated.append(rate)
    problems += _overlaps(dated)
    if problems:
        raise RateCardError(problems)
