"""Properties that hold for any usage: no unit-second lost or doubled, parts that add up to the
total to the cent, and the same answer on every run, whatever order the usage comes in."""

import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from billing.calculations import (
    Allocation,
    CriticalEvent,
    Rate,
    UsageAmount,
    allocated_seconds,
    credit_lines,
    downtime_credit_by_hour,
    idle_gpu_seconds,
    invoice_lines,
    utilization,
)

from .timeline import utc

WINDOW_START, WINDOW_END = utc(2025, 3, 1), utc(2025, 3, 4)
CLASSES = ["gpu:nvidia-h200", "mig:nvidia-a100-80gb:1g.10gb", "cpu", "storage-gib", "hami:x"]
SPAN = int((WINDOW_END - WINDOW_START).total_seconds())

instants = st.integers(min_value=-7200, max_value=SPAN + 7200).map(
    lambda offset: WINDOW_START + timedelta(seconds=offset)
)
demands = st.dictionaries(st.sampled_from(CLASSES), st.integers(0, 16), min_size=1, max_size=3)


@st.composite
def allocations(draw):
    start = draw(instants)
    end = draw(st.none() | st.integers(0, 40 * 3600).map(lambda s: start + timedelta(seconds=s)))
    return Allocation(start=start, end=end, demand=draw(demands))


def _held_seconds(allocation: Allocation) -> int:
    start = max(allocation.start, WINDOW_START)
    end = WINDOW_END if allocation.end is None else min(allocation.end, WINDOW_END)
    return max(0, int((end - start).total_seconds()))


@given(st.lists(allocations(), max_size=12))
def test_hour_splitting_loses_or_doubles_no_unit_second(history):
    buckets = allocated_seconds(history, window_start=WINDOW_START, window_end=WINDOW_END)

    for resource in CLASSES:
        expected = sum(_held_seconds(a) * a.demand.get(resource, 0) for a in history)
        assert sum(s for (_, r), s in buckets.items() if r == resource) == expected
    for hour, resource in buckets:
        assert WINDOW_START <= hour < WINDOW_END and hour.minute == hour.second == 0
        most = sum(a.demand.get(resource, 0) for a in history) * 3600
        assert 0 < buckets[hour, resource] <= most


prices = st.decimals(min_value=0, max_value=50, places=4)
percents = st.decimals(min_value=0, max_value=100, places=2)
PERIOD = {"period_start": WINDOW_START, "period_end": WINDOW_END}


@st.composite
def rate_cards(draw):
    rates = []
    for resource in CLASSES[:4]:
        change = WINDOW_START + timedelta(hours=draw(st.integers(1, 71)))
        unit = "month" if resource == "storage-gib" else "hour"
        rates.append(Rate(resource, draw(prices), utc(2025, 1, 1), change, unit=unit))
        if draw(st.booleans()):  # some classes go unpriced after their price ends
            rates.append(Rate(resource, draw(prices), change, None, unit=unit))
    return rates


usage_amounts = st.lists(
    st.builds(
        UsageAmount,
        st.sampled_from(CLASSES),
        st.integers(0, 71).map(lambda h: WINDOW_START + timedelta(hours=h)),
        st.integers(0, 3600 * 16),
    ),
    max_size=40,
)


@settings(max_examples=200)
@given(usage_amounts, rate_cards(), percents, st.none() | percents, st.randoms())
def test_lines_discount_and_tax_add_up_to_the_total_on_every_run(usage, rates, off, tax, rnd):
    invoice = invoice_lines(usage, rates, **PERIOD, discount_percent=off, tax_percent=tax)

    parts = [line.amount for line in invoice.lines] + [invoice.discount, invoice.tax]
    assert sum(parts) == invoice.total
    assert all(value == value.quantize(Decimal("0.01")) for value in [*parts, invoice.total])
    assert invoice.total >= 0 and invoice.discount <= 0 and invoice.tax >= 0
    # Every unit-second is either on a line or reported as unpriced.
    billed = sum(line.unit_seconds for line in invoice.lines)
    assert billed + sum(u.unit_seconds for u in invoice.unpriced) == sum(u[2] for u in usage)

    shuffled = list(usage)
    rnd.shuffle(shuffled)
    again = invoice_lines(
        shuffled, list(reversed(rates)), **PERIOD, discount_percent=off, tax_percent=tax
    )
    assert again == invoice


measured_usage = st.dictionaries(
    st.tuples(
        st.sampled_from(["node-a", "node-b"]),
        st.sampled_from(CLASSES[:2]),
        st.integers(0, 71).map(lambda h: WINDOW_START + timedelta(hours=h)),
    ),
    st.integers(0, 8 * 3600),
    max_size=30,
)
events = st.lists(
    st.builds(
        CriticalEvent,
        st.sampled_from(["node-a", "node-b", "node-c"]),
        instants,
        st.none() | instants,
    ).filter(lambda e: e.end is None or e.end >= e.start),
    max_size=4,
)


@settings(max_examples=200)
@given(measured_usage, events, rate_cards(), percents)
def test_downtime_credit_never_exceeds_what_was_measured_and_keeps_the_total_whole(
    measured, outages, rates, off
):
    credit = downtime_credit_by_hour(measured, outages)

    for (hour, resource), seconds in credit.items():
        on_hosts = sum(s for (_, r, h), s in measured.items() if (h, r) == (hour, resource))
        assert 0 < seconds <= on_hosts
    usage = [UsageAmount(r, h, s) for (_, r, h), s in measured.items()]
    credits = credit_lines(credit, rates, **PERIOD)
    invoice = invoice_lines(usage, rates, **PERIOD, credits=credits, discount_percent=off)
    parts = [line.amount for line in invoice.lines + invoice.credit_lines]
    assert sum(parts) + invoice.discount + invoice.tax == invoice.total >= 0


@given(
    st.dictionaries(st.sampled_from(CLASSES), st.integers(0, 10**6)),
    st.dictionaries(st.sampled_from(CLASSES), st.integers(0, 10**6)),
)
def test_utilization_is_one_minus_the_idle_share(allocated, measured):
    idle = idle_gpu_seconds(allocated=allocated, measured=measured)
    share = utilization(allocated=allocated, measured=measured)

    assert all(seconds >= 0 for seconds in idle.values())
    if sum(allocated.values()) == 0:
        assert share is None
    else:
        exact = 1 - Decimal(sum(idle.values())) / Decimal(sum(allocated.values()))
        assert Decimal(0) <= share <= Decimal(1)
        assert abs(share - exact) <= Decimal("0.00005")


def test_the_calculations_import_no_django():
    probe = (
        "import sys, billing.calculations; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'django'); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=False
    )

    assert result.returncode == 0, result.stdout + result.stderr
