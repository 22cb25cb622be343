"""Rate cards: the rate in force, monthly rates over the month's own hours, and cards refused."""

from decimal import Decimal

import pytest

from billing.calculations import Rate, RateCardError, check_rates, hours_in_month, rate_for

from .timeline import utc

H200 = "gpu:nvidia-h200"
MARCH_RATE = Rate(H200, Decimal("2.50"), utc(2025, 1, 1), utc(2025, 3, 16))
LATER_RATE = Rate(H200, Decimal("3.00"), utc(2025, 3, 16), None)


def test_the_rate_in_force_is_the_one_whose_period_holds_the_hour():
    rates = [MARCH_RATE, LATER_RATE, Rate("cpu", Decimal("0.04"), utc(2025, 1, 1), None)]

    assert rate_for(rates, resource=H200, at=utc(2025, 3, 15, 23)) == MARCH_RATE
    assert rate_for(rates, resource=H200, at=utc(2025, 3, 16)) == LATER_RATE  # valid_to excluded
    assert rate_for(rates, resource=H200, at=utc(2024, 12, 31, 23)) is None
    assert rate_for(rates, resource="gpu:nvidia-l40s", at=utc(2025, 3, 16)) is None


@pytest.mark.parametrize(
    ("month", "hours"),
    [((2025, 4), 720), ((2025, 3), 744), ((2025, 2), 672), ((2024, 2), 696), ((2025, 12), 744)],
)
def test_a_month_has_its_calendar_number_of_hours(month, hours):
    assert hours_in_month(utc(*month, 17, 5)) == hours  # 30 x 24, 31 x 24, 28 x 24, 29 x 24


def test_a_monthly_price_is_spread_over_the_hours_of_the_month_it_falls_in():
    storage = Rate("storage-gib", Decimal("0.10"), utc(2025, 1, 1), None, unit="month")

    assert storage.hourly_price(at=utc(2025, 4, 10)) * 720 == Decimal("0.10")
    assert storage.hourly_price(at=utc(2025, 3, 10)) * 744 == Decimal("0.10")


def test_a_sound_card_passes():
    check_rates(
        [
            MARCH_RATE,
            LATER_RATE,  # starts exactly where the earlier one ends: adjacent, not overlapping
            Rate("mig:nvidia-a100-80gb:1g.10gb", Decimal("0.45"), utc(2025, 1, 1), None),
            Rate("storage-gib", Decimal("0.10"), utc(2025, 1, 1), None, unit="month"),
            Rate("count:vcluster", Decimal("0"), utc(2025, 1, 1), None),  # free is a price
        ]
    )


@pytest.mark.parametrize(
    ("rates", "message"),
    [
        (
            [MARCH_RATE, Rate(H200, Decimal("2.75"), utc(2025, 3, 10), utc(2025, 4, 1))],
            r"gpu:nvidia-h200: periods overlap \(2025-01-01T00:00:00\+00:00 to 2025-03-16",
        ),
        (
            [LATER_RATE, Rate(H200, Decimal("2.75"), utc(2025, 6, 1), None)],
            "periods overlap .* open end",
        ),
        ([Rate("cpu", Decimal("-0.01"), utc(2025, 1, 1), None)], "cpu: negative price -0.01"),
        (
            [Rate("cpu", Decimal("0.04"), utc(2025, 3, 1), utc(2025, 3, 1))],
            "valid_to is not after valid_from",
        ),
        (
            [Rate("cpu", Decimal("0.04"), utc(2025, 3, 2), utc(2025, 3, 1))],
            "valid_to is not after valid_from",
        ),
        (
            [Rate("gpu:nvidia-b300", Decimal("9"), utc(2025, 1, 1), None)],
            "'gpu:nvidia-b300' is not a known resource class",
        ),
        ([Rate("cpu", 0.04, utc(2025, 1, 1), None)], "Decimal or int, not float"),
        ([Rate("cpu", Decimal("NaN"), utc(2025, 1, 1), None)], "not a finite amount"),
        ([Rate("cpu", Decimal("1"), utc(2025, 1, 1, 9, 30), None)], "not on the hour"),
        (
            [Rate("cpu", Decimal("1"), utc(2025, 1, 1).replace(tzinfo=None), None)],
            "timezone-aware",
        ),
        ([Rate("cpu", Decimal("1"), utc(2025, 1, 1), None, unit="day")], "unit must be"),
    ],
)
def test_a_card_that_prices_wrongly_is_refused_with_the_reason(rates, message):
    with pytest.raises(RateCardError, match=message):
        check_rates(rates)


def test_every_fault_of_a_card_is_listed_at_once():
    with pytest.raises(RateCardError) as refused:
        check_rates(
            [
                Rate("cpu", Decimal("-1"), utc(2025, 1, 1), None),
                Rate("gpu:unknown", Decimal("1"), utc(2025, 1, 1), None),
                MARCH_RATE,
                Rate(H200, Decimal("2.75"), utc(2025, 3, 10), None),
            ]
        )

    assert len(refused.value.problems) == 3
    assert isinstance(refused.value, ValueError)  # so interfaces answer it as bad input
