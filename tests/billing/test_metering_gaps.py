"""unmetered_spans against its definition: every closed hour of the range since metering began
(METERING_START, else the oldest allocated window) without a done allocated window, as runs
of consecutive hours; whatever windows there are, of either source and any status."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from billing.models import MeteringWindow
from billing.selectors.metering_gaps import UnmeteredSpan, unmetered_spans

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)
DAY_ONE = datetime(2026, 11, 1, tzinfo=UTC)
NOW = DAY_ONE + timedelta(days=3, minutes=30)


def _by_definition(start, end, metering_start) -> list[UnmeteredSpan]:
    allocated = MeteringWindow.objects.filter(source="allocated")
    done = set(allocated.filter(status="done").values_list("hour", flat=True))
    began = metering_start or min(allocated.values_list("hour", flat=True), default=None)
    if began is None:
        return []
    spans: list[UnmeteredSpan] = []
    hour = start
    while hour < end and hour + HOUR <= NOW:
        if hour >= began and hour not in done:
            if spans and spans[-1].end == hour:
                spans[-1] = UnmeteredSpan(spans[-1].start, hour + HOUR)
            else:
                spans.append(UnmeteredSpan(hour, hour + HOUR))
        hour += HOUR
    return spans


@pytest.mark.parametrize("seed", range(12))
def test_the_spans_are_the_hours_without_a_done_allocated_window(settings, seed):
    rng = random.Random(seed)  # a repeatable sample
    hours = [DAY_ONE + n * HOUR for n in range(80)]
    first = rng.randrange(0, 40)
    for hour in hours[first:]:
        if rng.random() < 0.85:
            MeteringWindow.objects.create(
                source="allocated", hour=hour,
                status=rng.choice(["done"] * 8 + ["failed", "running"]))
        if rng.random() < 0.5:
            MeteringWindow.objects.create(source="measured", hour=hour, status="done")
    settings.METERING_START = rng.choice([None, None, DAY_ONE + timedelta(hours=20, minutes=5)])
    began = settings.METERING_START and (DAY_ONE + timedelta(hours=21))
    for _ in range(10):
        start = DAY_ONE + rng.randrange(0, 80) * HOUR
        end = start + rng.randrange(1, 60) * HOUR
        assert unmetered_spans(start=start, end=end, now=NOW) == _by_definition(
            start, end, began), (start, end)


def test_a_range_every_hour_of_which_is_metered_is_one_query(settings, django_assert_num_queries):
    settings.METERING_START = None
    for n in range(48):
        MeteringWindow.objects.create(source="allocated", hour=DAY_ONE + n * HOUR, status="done")
    with django_assert_num_queries(1):
        assert unmetered_spans(start=DAY_ONE, end=DAY_ONE + 2 * 24 * HOUR, now=NOW) == []
    MeteringWindow.objects.filter(hour=DAY_ONE + 5 * HOUR).delete()
    with django_assert_num_queries(2):
        assert unmetered_spans(start=DAY_ONE, end=DAY_ONE + 2 * 24 * HOUR, now=NOW) == [
            UnmeteredSpan(DAY_ONE + 5 * HOUR, DAY_ONE + 6 * HOUR)]


def test_nothing_ever_metered_is_no_gap_unless_metering_start_says_it_began(settings):
    settings.METERING_START = None
    assert unmetered_spans(start=DAY_ONE, end=DAY_ONE + 5 * HOUR, now=NOW) == []
    settings.METERING_START = DAY_ONE + 2 * HOUR
    assert unmetered_spans(start=DAY_ONE, end=DAY_ONE + 5 * HOUR, now=NOW) == [
        UnmeteredSpan(DAY_ONE + 2 * HOUR, DAY_ONE + 5 * HOUR)]
