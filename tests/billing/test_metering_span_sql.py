"""A span metered by PostgreSQL (one INSERT ... SELECT) stores exactly the records the Python
reading of the same histories computes, whatever the histories: events before ready or after
deletion, no ready event (the column instead), several events in one instant or one second,
microseconds, demands with quota counters, zeros, floats, booleans, negative or huge units;
and metering the span again writes nothing twice."""

from datetime import timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing.models import MeteringWindow, UsageRecord
from billing.services import metering
from billing.services.metering_allocated import allocated_rows
from core.models import AuditEvent
from tenants.workloads.models import Workload, WorkloadEvent

from .timeline import utc

START = utc(2026, 3, 3, 8)
HOURS = 5
END = START + timedelta(hours=HOURS)
units = st.one_of(
    st.integers(0, 4),
    st.integers(10**6, 10**7),
    st.sampled_from([2.0, True, False, -1, "2", None]),
)
demands = st.dictionaries(
    st.sampled_from(["gpu:nvidia-h100-80gb", "cpu", "storage-gib", "count:vm", ""]),
    units,
    max_size=4,
)
moments = st.one_of(
    st.integers(-3, HOURS + 2).map(lambda h: START + timedelta(hours=h)),
    st.integers(-3 * 3600, (HOURS + 2) * 3600).map(lambda s: START + timedelta(seconds=s)),
    st.integers(-(10**6), 10**6).map(lambda us: START + timedelta(hours=2, microseconds=us)),
)
event = st.tuples(st.sampled_from(["ready", "deleted", "provisioning", "scaled"]), moments, demands)
workload = st.tuples(
    st.none() | moments,  # ready_at
    st.none() | moments,  # deleted_at
    demands,  # the workload's current demand
    st.lists(event, max_size=6),
)


def store(tenant, index: int, ready_at, deleted_at, demand, events) -> None:
    created = Workload.objects.create(
        tenant=tenant,
        kind="vm",
        name=f"w-{index}",
        demand=demand,
        ready_at=ready_at,
        deleted_at=deleted_at,
    )
    for kind, at, after in events:
        fields = {"kind": "scaled"}
        if kind != "scaled":
            fields = {"kind": "transition", "to_status": kind}
        WorkloadEvent.objects.create(workload=created, created_at=at, demand=after, **fields)


def records() -> set:
    return set(
        UsageRecord.objects.values_list(
            "hour", "tenant_id", "workload_id", "resource", "unit_seconds"
        )
    )


@pytest.mark.django_db
@given(workloads=st.lists(workload, min_size=1, max_size=3))
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_the_span_written_by_sql_is_the_one_python_computes(tenant, workloads):
    with transaction.atomic():
        for index, (ready_at, deleted_at, demand, events) in enumerate(workloads):
            store(tenant, index, ready_at, deleted_at, demand, events)
        computed = set(allocated_rows(start=START, end=END))

        written = metering.usage_meter_span(start=START, end=END)
        first = records()
        again = metering.usage_meter_span(start=START, end=END)
        windows = list(
            MeteringWindow.objects.order_by("hour").values_list(
                "hour", "records", "unit_seconds", "attempts"
            )
        )
        audited = AuditEvent.objects.filter(action="usage.meter_span").count()
        second = records()
        transaction.set_rollback(True)

    assert first == computed and written == len(computed)
    assert second == first and again == written
    per_hour = {
        START + timedelta(hours=h): [
            s for hour, *_, s in computed if hour == START + timedelta(hours=h)
        ]
        for h in range(HOURS)
    }
    assert windows == [(hour, len(seconds), sum(seconds), 2) for hour, seconds in per_hour.items()]
    assert audited == 2
