"""Downtime credit: GPU time on a host under an open critical event, prorated within the hour."""

from decimal import Decimal

import pytest

from billing.calculations import (
    BillingError,
    CriticalEvent,
    Rate,
    UsageAmount,
    credit_lines,
    downtime_credit_by_hour,
    downtime_credit_seconds,
    invoice_lines,
)

from .timeline import utc

H100 = "gpu:nvidia-h100-80gb"
MARCH = {"period_start": utc(2025, 3, 1), "period_end": utc(2025, 4, 1)}
MEASURED = {
    ("gpu-node-01", H100, utc(2025, 3, 3, 10)): 7200,  # 2 GPUs busy all hour
    ("gpu-node-01", H100, utc(2025, 3, 3, 11)): 7200,
    ("gpu-node-01", H100, utc(2025, 3, 3, 12)): 3600,
    ("gpu-node-02", H100, utc(2025, 3, 3, 10)): 7200,  # a healthy host
}
FAULT = CriticalEvent("gpu-node-01", utc(2025, 3, 3, 10, 30), utc(2025, 3, 3, 11, 15))


def test_usage_on_a_failing_host_is_credited_for_the_part_of_the_hour_it_was_failing():
    credit = downtime_credit_by_hour(MEASURED, [FAULT])

    assert credit == {
        (utc(2025, 3, 3, 10), H100): 3600,  # 7 200 x 30 min / 60 min
        (utc(2025, 3, 3, 11), H100): 1800,  # 7 200 x 15 min / 60 min
    }
    assert downtime_credit_seconds(MEASURED, [FAULT]) == {H100: 5400}  # 1.5 GPU-hours


def test_overlapping_events_on_one_host_credit_the_time_once():
    events = [
        CriticalEvent("gpu-node-01", utc(2025, 3, 3, 10, 30), utc(2025, 3, 3, 11)),
        CriticalEvent("gpu-node-01", utc(2025, 3, 3, 10, 45), utc(2025, 3, 3, 11, 15)),
    ]

    assert downtime_credit_seconds(MEASURED, events) == {H100: 5400}


def test_an_open_event_credits_until_the_end_of_what_was_measured():
    events = [CriticalEvent("gpu-node-01", utc(2025, 3, 3, 12, 30), None)]

    # 12:00 hour: 3 600 x 30 min / 60 min = 1 800
    assert downtime_credit_by_hour(MEASURED, events) == {(utc(2025, 3, 3, 12), H100): 1800}


def test_an_event_on_another_host_or_outside_the_hours_credits_nothing():
    events = [
        CriticalEvent("gpu-node-03", utc(2025, 3, 3), None),
        CriticalEvent("gpu-node-01", utc(2025, 3, 2), utc(2025, 3, 3, 10)),  # ends as hour starts
    ]

    assert downtime_credit_seconds(MEASURED, events) == {}


def test_credit_rounds_to_the_second_within_each_hour():
    measured = {("gpu-node-01", H100, utc(2025, 3, 3, 10)): 1000}
    one_second = CriticalEvent("gpu-node-01", utc(2025, 3, 3, 10, 0, 0), utc(2025, 3, 3, 10, 0, 2))
    seven = CriticalEvent("gpu-node-01", utc(2025, 3, 3, 10, 0, 0), utc(2025, 3, 3, 10, 0, 7))

    assert downtime_credit_seconds(measured, [one_second]) == {H100: 1}  # 2000/3600 = 0.56 -> 1
    assert downtime_credit_seconds(measured, [seven]) == {H100: 2}  # 7000/3600 = 1.94 -> 2


def test_credit_lines_are_negative_and_priced_at_the_rate_in_force_in_each_hour():
    rates = [
        Rate(H100, Decimal("2.00"), utc(2025, 1, 1), utc(2025, 3, 3, 11)),
        Rate(H100, Decimal("2.40"), utc(2025, 3, 3, 11), None),
    ]

    lines = credit_lines(downtime_credit_by_hour(MEASURED, [FAULT]), rates, **MARCH)

    first, second = lines
    # 10:00: 3 600 s = 1 GPU-hour x 2.00 = 2.00; 11:00: 1 800 s = 0.5 GPU-hour x 2.40 = 1.20
    assert (first.kind, first.unit_seconds, first.quantity_hours, first.amount) == (
        "credit",
        -3600,
        Decimal("-1.000000"),
        Decimal("-2.00"),
    )
    assert (second.unit_price, second.quantity_hours, second.amount) == (
        Decimal("2.40"),
        Decimal("-0.500000"),
        Decimal("-1.20"),
    )


def test_credit_lines_are_listed_apart_from_usage_and_netted_into_the_total():
    rates = [Rate(H100, Decimal("2.00"), utc(2025, 1, 1), None)]
    usage = [UsageAmount(H100, hour, seconds) for (_, _, hour), seconds in MEASURED.items()]
    credits = credit_lines(downtime_credit_by_hour(MEASURED, [FAULT]), rates, **MARCH)

    invoice = invoice_lines(usage, rates, **MARCH, credits=credits, tax_percent=Decimal("10"))

    # usage: (7 200 + 7 200 + 3 600 + 7 200) s = 7 GPU-hours x 2.00 = 14.00
    assert [line.amount for line in invoice.lines] == [Decimal("14.00")]
    # credit: 5 400 s = 1.5 GPU-hours x 2.00 = 3.00
    assert [line.amount for line in invoice.credit_lines] == [Decimal("-3.00")]
    assert invoice.subtotal == Decimal("11.00")
    assert invoice.tax == Decimal("1.10")  # 10 % of 11.00
    assert invoice.total == Decimal("12.10")


def test_credits_larger_than_the_usage_are_refused():
    rates = [Rate(H100, Decimal("2.00"), utc(2025, 1, 1), None)]
    credits = credit_lines({(utc(2025, 3, 3, 10), H100): 7200}, rates, **MARCH)

    with pytest.raises(BillingError, match="exceed the usage"):
        invoice_lines(
            [UsageAmount(H100, utc(2025, 3, 3, 10), 3600)], rates, **MARCH, credits=credits
        )


def test_an_hour_without_a_price_earns_no_credit_line():
    credits = credit_lines({(utc(2025, 3, 3, 10), "hami-core:x"): 3600}, [], **MARCH)

    assert credits == ()


def test_naive_event_times_are_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        downtime_credit_seconds(
            MEASURED, [CriticalEvent("gpu-node-01", utc(2025, 3, 3).replace(tzinfo=None), None)]
        )
