"""Invoice lines against hand-computed amounts: one rounding per line, then per total."""

from decimal import Decimal

import pytest

from billing.calculations import (
    Allocation,
    BillingError,
    Rate,
    RateCardError,
    UsageAmount,
    allocated_seconds,
    invoice_lines,
)

from .timeline import as_usage, utc

H200 = "gpu:nvidia-h200"
H100 = "gpu:nvidia-h100-80gb"
L40S = "gpu:nvidia-l40s"
STORAGE = "storage-gib"
MARCH = {"period_start": utc(2025, 3, 1), "period_end": utc(2025, 4, 1)}
APRIL = {"period_start": utc(2025, 4, 1), "period_end": utc(2025, 5, 1)}


def _usage(*allocations, period):
    return as_usage(
        allocated_seconds(
            allocations, window_start=period["period_start"], window_end=period["period_end"]
        )
    )


def test_a_price_change_mid_month_splits_the_line():
    rates = [
        Rate(H200, Decimal("2.50"), utc(2025, 1, 1), utc(2025, 3, 16)),
        Rate(H200, Decimal("3.00"), utc(2025, 3, 16), None),
    ]
    usage = _usage(Allocation(start=utc(2025, 2, 20), end=None, demand={H200: 2}), period=MARCH)

    invoice = invoice_lines(usage, rates, **MARCH)

    before, after = invoice.lines
    # 1-15 March: 15 days x 24 h x 2 GPUs = 720 GPU-hours x 2.50 = 1 800.00
    assert (before.period_start, before.period_end) == (utc(2025, 3, 1), utc(2025, 3, 16))
    assert (before.quantity_hours, before.unit_price, before.amount) == (
        Decimal("720.000000"),
        Decimal("2.50"),
        Decimal("1800.00"),
    )
    # 16-31 March: 16 days x 24 h x 2 GPUs = 768 GPU-hours x 3.00 = 2 304.00
    assert (after.period_start, after.period_end) == (utc(2025, 3, 16), utc(2025, 4, 1))
    assert (after.quantity_hours, after.amount) == (Decimal("768.000000"), Decimal("2304.00"))
    assert before.label == "NVIDIA H200 141GB GPUs"
    assert invoice.subtotal == invoice.total == Decimal("4104.00")  # 1 800 + 2 304
    assert invoice.unpriced == ()


def test_partial_hours_are_priced_from_their_seconds_and_rounded_once_per_line():
    rates = [Rate(L40S, Decimal("1.01"), utc(2025, 1, 1), None)]
    usage = _usage(
        Allocation(start=utc(2025, 3, 3, 10, 15), end=utc(2025, 3, 3, 12, 30), demand={L40S: 1}),
        period=MARCH,
    )

    (line,) = invoice_lines(usage, rates, **MARCH).lines

    # 10:15-12:30 = 8 100 s = 2.25 h x 1.01 = 2.2725 -> 2.27. Rounding each hour instead would
    # give 0.7575 -> 0.76, 1.01, 0.505 -> 0.51: 2.28, a cent too much.
    assert line.unit_seconds == 8100
    assert line.quantity_hours == Decimal("2.250000")
    assert line.amount == Decimal("2.27")


def test_a_half_cent_rounds_up():
    rates = [Rate(L40S, Decimal("1.15"), utc(2025, 1, 1), None)]
    # 1 800 s = 0.5 h x 1.15 = 0.575 -> 0.58 (ROUND_HALF_UP; banker's rounding would give 0.58
    # too, so also 0.5 h x 0.25 = 0.125 -> 0.13, where half-even would give 0.12)
    (line,) = invoice_lines([UsageAmount(L40S, utc(2025, 3, 3, 10), 1800)], rates, **MARCH).lines
    assert line.amount == Decimal("0.58")
    cheap = [Rate(L40S, Decimal("0.25"), utc(2025, 1, 1), None)]
    (line,) = invoice_lines([UsageAmount(L40S, utc(2025, 3, 3, 10), 1800)], cheap, **MARCH).lines
    assert line.amount == Decimal("0.13")


def test_a_workload_spanning_two_months_is_billed_in_each_month_for_its_own_hours():
    rates = [Rate(H100, Decimal("2.00"), utc(2025, 1, 1), None)]
    workload = Allocation(start=utc(2025, 3, 31, 22), end=utc(2025, 4, 1, 2, 30), demand={H100: 1})

    march = invoice_lines(_usage(workload, period=MARCH), rates, **MARCH)
    april = invoice_lines(_usage(workload, period=APRIL), rates, **APRIL)

    assert march.total == Decimal("4.00")  # 22:00-24:00 on 31 March = 2 h x 2.00
    assert april.total == Decimal("5.00")  # 00:00-02:30 on 1 April = 2.5 h x 2.00
    assert march.lines[0].period_end == april.lines[0].period_start == utc(2025, 4, 1)


def test_discount_and_tax_are_separate_amounts_each_rounded_once():
    rates = [Rate(H200, Decimal("2.50"), utc(2025, 1, 1), None)]
    usage = [UsageAmount(H200, utc(2025, 3, 3, hour), 3600 * 8) for hour in range(10)]

    invoice = invoice_lines(
        usage, rates, **MARCH, discount_percent=Decimal("12.5"), tax_percent=Decimal("19")
    )

    # 10 h x 8 GPUs = 80 GPU-hours x 2.50 = 200.00
    assert invoice.subtotal == Decimal("200.00")
    assert invoice.discount == Decimal("-25.00")  # 12.5 % of 200.00
    assert invoice.tax == Decimal("33.25")  # 19 % of 175.00 = 33.25
    assert invoice.total == Decimal("208.25")  # 200.00 - 25.00 + 33.25
    assert invoice.discount_percent == Decimal("12.5")
    assert invoice.tax_percent == Decimal("19")


def test_discount_and_tax_round_half_up_on_the_cent():
    rates = [Rate(L40S, Decimal("1.01"), utc(2025, 1, 1), None)]
    usage = [UsageAmount(L40S, utc(2025, 3, 3, 10), 8100)]  # 2.27, as above

    invoice = invoice_lines(
        usage, rates, **MARCH, discount_percent=Decimal("12.5"), tax_percent=Decimal("20")
    )

    assert invoice.discount == Decimal("-0.28")  # 12.5 % of 2.27 = 0.28375 -> 0.28
    assert invoice.tax == Decimal("0.40")  # 20 % of 1.99 = 0.398 -> 0.40
    assert invoice.total == Decimal("2.39")  # 2.27 - 0.28 + 0.40


def test_no_tax_rate_means_no_tax():
    rates = [Rate(L40S, Decimal("1.00"), utc(2025, 1, 1), None)]

    invoice = invoice_lines([UsageAmount(L40S, utc(2025, 3, 3, 10), 3600)], rates, **MARCH)

    assert (invoice.tax_percent, invoice.tax, invoice.total) == (
        None,
        Decimal("0.00"),
        Decimal("1.00"),
    )


def test_storage_per_gib_month_costs_the_quoted_price_for_a_whole_month_of_30_or_31_days():
    rates = [Rate(STORAGE, Decimal("0.10"), utc(2025, 1, 1), None, unit="month")]
    disk = Allocation(start=utc(2025, 1, 1), end=None, demand={STORAGE: 100})

    (march,) = invoice_lines(_usage(disk, period=MARCH), rates, **MARCH).lines
    (april,) = invoice_lines(_usage(disk, period=APRIL), rates, **APRIL).lines

    # 100 GiB x a whole month = 100 GiB-months x 0.10 = 10.00, in 744-hour March as in 720-hour
    # April
    assert (march.quantity_hours, march.quantity, march.amount) == (
        Decimal("74400.000000"),  # 100 GiB x 744 h
        Decimal("100.000000"),
        Decimal("10.00"),
    )
    assert (april.quantity_hours, april.quantity, april.amount) == (
        Decimal("72000.000000"),  # 100 GiB x 720 h
        Decimal("100.000000"),
        Decimal("10.00"),
    )
    assert march.unit == april.unit == "month"


def test_the_same_hours_of_storage_cost_less_in_a_31_day_month():
    rates = [Rate(STORAGE, Decimal("0.10"), utc(2025, 1, 1), None, unit="month")]
    fifteen_days = {STORAGE: 100}

    march = invoice_lines(
        _usage(
            Allocation(start=utc(2025, 3, 1), end=utc(2025, 3, 16), demand=fifteen_days),
            period=MARCH,
        ),
        rates,
        **MARCH,
    )
    april = invoice_lines(
        _usage(
            Allocation(start=utc(2025, 4, 1), end=utc(2025, 4, 16), demand=fifteen_days),
            period=APRIL,
        ),
        rates,
        **APRIL,
    )

    # 15 days = 360 h. April: 100 x 360 / 720 = 50 GiB-months x 0.10 = 5.00.
    # March: 100 x 360 / 744 = 48.387097 GiB-months x 0.10 = 4.8387… -> 4.84.
    assert april.total == Decimal("5.00")
    assert march.total == Decimal("4.84")
    assert march.lines[0].quantity == Decimal("48.387097")


def test_storage_over_a_period_across_two_months_gets_a_line_per_month():
    rates = [Rate(STORAGE, Decimal("0.10"), utc(2025, 1, 1), None, unit="month")]
    period = {"period_start": utc(2025, 3, 16), "period_end": utc(2025, 4, 16)}
    disk = Allocation(start=utc(2025, 1, 1), end=None, demand={STORAGE: 100})

    march, april = invoice_lines(_usage(disk, period=period), rates, **period).lines

    # 16-31 March = 384 h: 100 x 384 / 744 = 51.612903 GiB-months x 0.10 = 5.1612… -> 5.16
    assert (march.period_start, march.period_end) == (utc(2025, 3, 16), utc(2025, 4, 1))
    assert (march.quantity, march.amount) == (Decimal("51.612903"), Decimal("5.16"))
    # 1-15 April = 360 h: 100 x 360 / 720 = 50 GiB-months x 0.10 = 5.00
    assert (april.period_start, april.period_end) == (utc(2025, 4, 1), utc(2025, 4, 16))
    assert (april.quantity, april.amount) == (Decimal("50.000000"), Decimal("5.00"))


def test_usage_without_a_price_is_reported_with_its_quantity_and_never_billed_at_zero():
    rates = [Rate(H200, Decimal("2.50"), utc(2025, 3, 10), None)]
    share = "hami-core:nvidia-h100-80gb"  # a class the vocabulary does not know (yet)
    usage = [
        UsageAmount(H200, utc(2025, 3, 9, 22), 3600),  # before the card has a price
        UsageAmount(H200, utc(2025, 3, 9, 23), 1800),
        UsageAmount(H200, utc(2025, 3, 10, 0), 3600),  # priced
        UsageAmount(share, utc(2025, 3, 10, 0), 3600 * 30),
    ]

    invoice = invoice_lines(
        usage, [*rates, Rate(share, Decimal("1"), utc(2025, 1, 1), None)], **MARCH
    )

    assert [(line.resource, line.amount) for line in invoice.lines] == [(H200, Decimal("2.50"))]
    no_rate, unknown = invoice.unpriced
    assert (no_rate.resource, no_rate.reason, no_rate.unit_seconds, no_rate.quantity_hours) == (
        H200,
        "no rate in force",
        5400,
        Decimal("1.500000"),
    )
    assert (no_rate.period_start, no_rate.period_end) == (utc(2025, 3, 9, 22), utc(2025, 3, 10))
    assert (unknown.resource, unknown.reason, unknown.quantity_hours) == (
        share,
        "unknown resource class",
        Decimal("30.000000"),
    )
    assert invoice.total == Decimal("2.50")


def test_buckets_of_several_workloads_in_one_hour_add_up():
    rates = [Rate("cpu", Decimal("0.04"), utc(2025, 1, 1), None)]
    usage = [UsageAmount("cpu", utc(2025, 3, 3, 10), 3600 * 16)] * 3

    (line,) = invoice_lines(usage, rates, **MARCH).lines

    assert line.amount == Decimal("1.92")  # 3 x 16 vCPU-hours = 48 x 0.04


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        ([UsageAmount("cpu", utc(2025, 4, 1), 60)], "outside the invoice period"),
        ([UsageAmount("cpu", utc(2025, 3, 3, 10, 30), 60)], "does not start on the hour"),
        ([UsageAmount("cpu", utc(2025, 3, 3, 10), -1)], "whole number"),
        ([UsageAmount("cpu", utc(2025, 3, 3, 10), 1.5)], "whole number"),
        ([UsageAmount("cpu", utc(2025, 3, 3).replace(tzinfo=None), 60)], "timezone-aware"),
    ],
)
def test_usage_that_cannot_belong_to_the_invoice_is_refused(usage, message):
    rates = [Rate("cpu", Decimal("0.04"), utc(2025, 1, 1), None)]
    with pytest.raises(ValueError, match=message):
        invoice_lines(usage, rates, **MARCH)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"discount_percent": Decimal("101")}, "between 0 and 100"),
        ({"discount_percent": Decimal("-1")}, "between 0 and 100"),
        ({"tax_percent": Decimal("-19")}, "tax_percent must be between 0"),
        ({"discount_percent": 0.1}, "not float"),
        ({"period_end": utc(2025, 3, 1)}, "ends after it starts"),
        ({"period_end": utc(2025, 3, 31, 12, 30)}, "whole UTC hour"),
    ],
)
def test_impossible_invoice_options_are_refused(options, message):
    with pytest.raises((BillingError, TypeError), match=message):
        invoice_lines([], [], **{**MARCH, **options})


def test_a_card_that_would_price_an_hour_twice_stops_the_invoice():
    rates = [
        Rate(H200, Decimal("2.50"), utc(2025, 1, 1), None),
        Rate(H200, Decimal("3.00"), utc(2025, 3, 16), None),
    ]
    with pytest.raises(RateCardError, match="periods overlap"):
        invoice_lines([UsageAmount(H200, utc(2025, 3, 3), 3600)], rates, **MARCH)


def test_a_float_price_stops_the_invoice():
    rates = [Rate(H200, 2.5, utc(2025, 1, 1), None)]
    with pytest.raises(RateCardError, match="not float"):
        invoice_lines([UsageAmount(H200, utc(2025, 3, 3), 3600)], rates, **MARCH)
