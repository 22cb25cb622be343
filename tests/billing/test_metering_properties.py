"""No unit-second is lost or doubled between the pure `allocated_seconds` over a workload's
whole life and the usage records metering stores hour by hour, whatever its history: events
before ready, scale changes at any second (on the hour, within the same second), a stop to
its disk, deleted or still running."""

from datetime import timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing.calculations import allocated_seconds, allocation_history
from billing.models import MeteringWindow, UsageRecord
from billing.services import metering
from tenants.workloads.models import Workload, WorkloadEvent

from .timeline import utc

START = utc(2026, 3, 3, 8)
HOURS = 5
H100 = "gpu:nvidia-h100-80gb"
demands = st.fixed_dictionaries({
    H100: st.integers(0, 4), "cpu": st.integers(0, 16), "storage-gib": st.integers(0, 100),
    "count:vm": st.just(1),
})
# Offsets into the metered range: whole hours, whole seconds and microseconds all turn up.
offsets = st.one_of(
    st.integers(0, HOURS - 1).map(lambda h: timedelta(hours=h)),
    st.integers(0, HOURS * 3600 - 1).map(lambda s: timedelta(seconds=s)),
    st.integers(0, HOURS * 3600 * 10**6 - 1).map(lambda us: timedelta(microseconds=us)),
)


@st.composite
def histories(draw):
    """(event kind, moment, demand after it) in time order, with exactly one ready
    transition and at most one deletion, which comes last."""
    moments = sorted(draw(st.lists(offsets, min_size=2, max_size=8, unique=True)))
    ready_index = draw(st.integers(0, len(moments) - 1))
    deleted = draw(st.booleans()) and ready_index < len(moments) - 1
    events, demand = [], draw(demands)
    for index, offset in enumerate(moments):
        if index == ready_index:
            events.append(("ready", START + offset, demand))
        elif deleted and index == len(moments) - 1:
            events.append(("deleted", START + offset, demand))
        else:
            demand = draw(demands)
            events.append(("scaled", START + offset, demand))
    return events


def expected(events) -> dict:
    ready = next(i for i, event in enumerate(events) if event[0] == "ready")
    ended = events[-1][1] if events[-1][0] == "deleted" else None
    changes = [(at, demand) for kind, at, demand in events[ready:] if kind != "deleted"]
    buckets = allocated_seconds(allocation_history(changes, ended_at=ended),
                                window_start=START, window_end=START + timedelta(hours=HOURS))
    return {key: s for key, s in buckets.items() if s and not key[1].startswith("count:")}


def store(tenant, events) -> None:
    workload = Workload.objects.create(tenant=tenant, kind="vm", name="prop", demand={})
    for kind, at, demand in events:
        fields = {"kind": "scaled"}
        if kind in ("ready", "deleted"):
            fields = {"kind": "transition", "to_status": kind}
        WorkloadEvent.objects.create(workload=workload, created_at=at, demand=demand, **fields)


@pytest.mark.django_db
@given(events=histories())
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_hourly_records_add_up_to_the_whole_life_exactly(tenant, events):
    with transaction.atomic():
        store(tenant, events)
        for hour in range(HOURS):
            metering.usage_meter_window(source="allocated", hour=START + timedelta(hours=hour))
        records = {(r.hour, r.resource): r.unit_seconds for r in UsageRecord.objects.all()}
        transaction.set_rollback(True)

    assert records == expected(events)


def _records() -> dict:
    return {(r.hour, r.resource, r.workload_id): r.unit_seconds for r in UsageRecord.objects.all()}


@pytest.mark.django_db
@given(first=histories(), second=histories())
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_a_span_metered_at_once_stores_what_hour_by_hour_stores(tenant, first, second):
    with transaction.atomic():
        store(tenant, first)
        Workload.objects.filter(name="prop").update(name="prop-1")
        store(tenant, second)
        for hour in range(HOURS):
            metering.usage_meter_window(source="allocated", hour=START + timedelta(hours=hour))
        hourly = _records()
        written = metering.usage_meter_span(start=START, end=START + timedelta(hours=HOURS))
        at_once = _records()
        windows = set(MeteringWindow.objects.values_list("hour", "status", "attempts"))
        transaction.set_rollback(True)

    assert at_once == hourly and written == len(hourly)
    # Every hour's window is done, metered twice now (once alone, once in the span).
    assert windows == {(START + timedelta(hours=h), "done", 2) for h in range(HOURS)}
