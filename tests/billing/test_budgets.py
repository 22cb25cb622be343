"""The month's forecast at the run-rate so far, and budget alerts at 80 % and 100 %, once each."""

from decimal import Decimal

import pytest

from billing.calculations import BillingError, budget_alerts_due, month_forecast

from .timeline import utc

APRIL = {"month_start": utc(2025, 4, 1), "month_end": utc(2025, 5, 1)}  # 30 days


@pytest.mark.parametrize(
    ("spent", "now", "forecast"),
    [
        ("100.00", utc(2025, 4, 11), "300.00"),  # 10 of 30 days: 100 x 30 / 10
        ("10.00", utc(2025, 4, 8), "42.86"),  # 7 of 30 days: 10 x 30 / 7 = 42.857… -> 42.86
        ("1.00", utc(2025, 4, 1, 12), "60.00"),  # half a day of 30: 1 x 60
        ("250.00", utc(2025, 5, 3), "250.00"),  # after the month: what was spent
        ("0.00", utc(2025, 4, 20), "0.00"),
    ],
)
def test_the_forecast_extrapolates_the_run_rate_and_rounds_once(spent, now, forecast):
    assert month_forecast(Decimal(spent), now=now, **APRIL) == Decimal(forecast)


def test_a_31_day_month_extrapolates_over_31_days():
    march = {"month_start": utc(2025, 3, 1), "month_end": utc(2025, 4, 1)}

    assert month_forecast(Decimal("70.00"), now=utc(2025, 3, 8), **march) == Decimal("310.00")


def test_at_the_start_of_the_month_there_is_no_rate_to_extrapolate():
    assert month_forecast(Decimal("5.00"), now=utc(2025, 4, 1), **APRIL) == Decimal("5.00")


def test_the_forecast_refuses_naive_times_and_float_money():
    with pytest.raises(ValueError, match="timezone-aware"):
        month_forecast(Decimal("1"), now=utc(2025, 4, 2).replace(tzinfo=None), **APRIL)
    with pytest.raises(TypeError, match="not float"):
        month_forecast(1.0, now=utc(2025, 4, 2), **APRIL)
    with pytest.raises(BillingError, match="after month_start"):
        month_forecast(
            Decimal("1"),
            now=utc(2025, 4, 2),
            month_start=utc(2025, 5, 1),
            month_end=utc(2025, 4, 1),
        )


@pytest.mark.parametrize(
    ("spent", "already_sent", "due"),
    [
        ("799.99", set(), []),
        ("800.00", set(), [80]),  # 80 % of 1 000 reached exactly
        ("950.00", {80}, []),  # sent already this month
        ("1000.00", {80}, [100]),
        ("1500.00", set(), [80, 100]),  # both crossed since the last look
        ("1500.00", {80, 100}, []),
    ],
)
def test_each_threshold_is_due_once_when_reached(spent, already_sent, due):
    assert (
        budget_alerts_due(spent=Decimal(spent), budget=Decimal("1000"), already_sent=already_sent)
        == due
    )


def test_a_budget_of_zero_means_no_budget():
    assert budget_alerts_due(spent=Decimal("5000"), budget=Decimal("0"), already_sent=set()) == []


def test_a_negative_budget_is_refused():
    with pytest.raises(BillingError, match="cannot be negative"):
        budget_alerts_due(spent=Decimal("1"), budget=Decimal("-1"), already_sent=set())
