"""Usage per day (`UsageDaily`), kept by database triggers, always equals the usage records'
own sums: whatever writes them (one by one, in bulk, by metering's COPY), rewrites them
(metering a window again), changes or deletes them; and the usage explorer's figures read from
it equal the ones summed from the records."""

from datetime import UTC, timedelta

import pytest
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate

from billing.models import UsageDaily, UsageRecord
from billing.selectors.explorer import (
    GPU_CLASSES,
    UsageFilter,
    gpu_hours_chart,
    gpu_usage_by_day,
    gpu_usage_by_tenant_and_class,
)
from billing.selectors.explorer.filters import _resource_q, _tenant_q
from billing.services import metering
from billing.services.metering_measured import MeasuredUsage, Measurement
from tests.billing.timeline import utc
from tests.billing.usage_data import H100, H200, MIG_3G, allocated, november_usage

pytestmark = pytest.mark.django_db

KEY = ("day", "tenant_id", "resource", "source")


def records_per_day() -> dict[tuple, tuple[int, int, int]]:
    """The records summed per UTC day, tenant, class and source, straight from the records."""
    rows = (
        UsageRecord.objects.annotate(day=TruncDate("hour", tzinfo=UTC))
        .values(*KEY)
        .annotate(n=Count("id"), units=Sum("unit_seconds"), busy=Sum("busy_seconds"))
        .order_by()
    )
    return {tuple(row[k] for k in KEY): (row["n"], row["units"], row["busy"]) for row in rows}


def rollup() -> dict[tuple, tuple[int, int, int]]:
    return {
        tuple(row[k] for k in KEY): (row["records"], row["unit_seconds"], row["busy_seconds"])
        for row in UsageDaily.objects.values(*KEY, "records", "unit_seconds", "busy_seconds")
    }


def test_each_write_of_records_is_summed_per_utc_day(tenant, other_tenant):
    november_usage(tenant, other_tenant)
    # The last hour of a day and the first of the next fall on their own UTC days.
    allocated(tenant, H100, utc(2026, 11, 3, 23), 100)
    allocated(tenant, H100, utc(2026, 11, 4, 0), 200)
    assert rollup() == records_per_day()
    assert rollup()[(utc(2026, 11, 3).date(), tenant.pk, H100, "allocated")] == (3, 14500, 0)

    UsageRecord.objects.bulk_create(
        [
            UsageRecord(
                tenant=other_tenant,
                source="allocated",
                resource=H200,
                hour=utc(2026, 11, 6, hour),
                unit_seconds=3600,
            )
            for hour in range(24)
        ]
    )
    assert rollup()[(utc(2026, 11, 6).date(), other_tenant.pk, H200, "allocated")] == (
        24,
        24 * 3600,
        0,
    )

    UsageRecord.objects.filter(resource=H100, hour__day=3).update(unit_seconds=10, busy_seconds=5)
    assert rollup() == records_per_day()

    UsageRecord.objects.filter(hour__gte=utc(2026, 11, 6, 12)).delete()
    assert rollup() == records_per_day()


def test_a_key_whose_records_are_all_gone_is_gone(tenant, other_tenant):
    november_usage(tenant, other_tenant)
    UsageRecord.objects.filter(tenant=other_tenant).delete()
    assert not UsageDaily.objects.filter(tenant=other_tenant).exists()
    UsageRecord.objects.all().delete()
    assert not UsageDaily.objects.exists()


def _measurement(tenant, seconds: int) -> Measurement:
    return Measurement(
        usage=[
            MeasuredUsage(
                tenant_id=tenant.pk,
                hostname=f"gpu-node-{n}",
                resource=H100,
                unit_seconds=seconds,
                busy_seconds=seconds // 2,
            )
            for n in range(3)
        ],
        unattributed_seconds=0,
        opencost=None,
    )


def test_metering_a_window_again_replaces_its_sums(tenant):
    """Metering writes with COPY and deletes a window's records before writing them again:
    a day metered twice, then again with other figures, counts each record once."""
    hours = [utc(2026, 11, 9, 22) + timedelta(hours=n) for n in range(4)]  # over midnight
    metering.usage_meter_measurements(measurements={h: _measurement(tenant, 3600) for h in hours})
    metering.usage_meter_measurements(measurements={h: _measurement(tenant, 3600) for h in hours})
    ninth = (utc(2026, 11, 9).date(), tenant.pk, H100, "measured")
    tenth = (utc(2026, 11, 10).date(), tenant.pk, H100, "measured")
    assert rollup()[ninth] == (6, 6 * 3600, 6 * 1800)
    metering.usage_meter_measurements(measurements={hours[3]: _measurement(tenant, 600)})
    assert rollup()[tenth] == (6, 3 * 3600 + 3 * 600, 3 * 1800 + 3 * 300)
    assert rollup() == records_per_day()


def _raw_by_tenant_and_class(usage: UsageFilter) -> list[dict]:
    """The explorer's table as it was summed before `UsageDaily`: from the hourly records."""
    records = UsageRecord.objects.filter(
        GPU_CLASSES, _tenant_q(usage), source="allocated", hour__gte=usage.start, hour__lt=usage.end
    )
    if usage.resource:
        records = records.filter(_resource_q(usage.resource))
    return list(
        records.values("tenant__slug", "tenant__name", "tenant__cost_center", "resource")
        .annotate(unit_seconds=Sum("unit_seconds"))
        .order_by("tenant__name", "tenant__slug", "resource")
    )


def test_the_explorers_figures_equal_the_records(tenant, other_tenant):
    november_usage(tenant, other_tenant)
    allocated(tenant, MIG_3G, utc(2026, 11, 30, 23), 1800)
    allocated(other_tenant, H100, utc(2026, 11, 15, 0), 900)
    for usage in (
        UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1)),
        UsageFilter(start=utc(2026, 11, 3), end=utc(2026, 11, 4)),
        UsageFilter(start=utc(2026, 10, 31), end=utc(2026, 12, 2), resource="nvidia-h100-80gb"),
        UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1), tenant_slug="acme"),
    ):
        assert list(gpu_usage_by_tenant_and_class(usage)) == _raw_by_tenant_and_class(usage)
    by_day = list(gpu_usage_by_day(UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1))))
    assert by_day[0] == {
        "day": utc(2026, 11, 3).date(),
        "tenant__slug": "acme",
        "resource": "gpu:nvidia-h100-80gb",
        "unit_seconds": 14400,
    }
    assert sum(row["unit_seconds"] for row in by_day) == sum(
        row["unit_seconds"]
        for row in _raw_by_tenant_and_class(
            UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1))
        )
    )
    chart = gpu_hours_chart(UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1)))
    assert chart.days[0] == "2026-11-01" and len(chart.days) == 30


def test_a_range_must_be_whole_utc_days():
    with pytest.raises(ValueError, match="not the start of a UTC day"):
        list(
            gpu_usage_by_tenant_and_class(
                UsageFilter(start=utc(2026, 11, 1, 5), end=utc(2026, 12, 1))
            )
        )
