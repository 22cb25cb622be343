"""A tenant's month: the spend forecast at the current run-rate, and the budget alerts due."""

from collections.abc import Set
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from .errors import BillingError
from .money import exact, require_aware, round_money

ALERT_THRESHOLDS = (80, 100)
"""Percentages of the budget at which the tenant is told, each once per month."""


def month_forecast(
    spent: Decimal, *, now: datetime, month_start: datetime, month_end: datetime
) -> Decimal:
    """What the month will have cost if spending goes on at the rate seen so far.

    Linear: `spent * month length / time elapsed`, rounded once to the cent. Before any time
    has elapsed there is no rate to extrapolate, and after the month it is what was spent.
    """
    spent_exact = exact(spent)
    now = require_aware(now, "now")
    start = require_aware(month_start, "month_start")
    end = require_aware(month_end, "month_end")
    if end <= start:
        raise BillingError("month_end must come after month_start.")
    elapsed = min(now, end) - start
    if elapsed <= timedelta(0):
        return round_money(spent_exact)
    microsecond = timedelta(microseconds=1)
    return round_money(spent_exact * Fraction((end - start) // microsecond, elapsed // microsecond))


def budget_alerts_due(*, spent: Decimal, budget: Decimal, already_sent: Set[int]) -> list[int]:
    """The thresholds (80, 100 % of the budget) reached and not yet alerted this month.

    A budget of zero means the tenant has no budget: no alert is ever due.
    """
    spent_exact, budget_exact = exact(spent), exact(budget)
    if budget_exact < 0:
        raise BillingError(f"A budget cannot be negative, got {budget}.")
    if budget_exact == 0:
        return []
    return [
        threshold
        for threshold in ALERT_THRESHOLDS
        if threshold not in already_sent and spent_exact * 100 >= budget_exact * threshold
    ]
