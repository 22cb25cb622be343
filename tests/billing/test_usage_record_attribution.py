"""Issue 35, part 4: allocated usage records carry who launched their workload and its label,
copied when metered by every path (an hour, a span in SQL), idempotently; measured records
carry neither; migration 0010 fills them in on the records metered before."""

from datetime import timedelta

import pytest

from billing.models import UsageRecord
from billing.services import metering
from billing.services.metering_measured import MeasuredUsage, Measurement
from tenants.workloads.models import Workload, WorkloadEvent
from tests.factories import UserFactory
from tests.support.migrations import migrate_to, migrate_to_latest

from .timeline import utc

HOUR = utc(2026, 3, 3, 8)
H100 = "gpu:nvidia-h100-80gb"


def _running(tenant, name: str, *, by, label: str = "") -> Workload:
    workload = Workload.objects.create(
        tenant=tenant, kind="inference", name=name, launched_by=by, label=label,
        demand={H100: 1}, ready_at=HOUR - timedelta(hours=1),
    )
    WorkloadEvent.objects.create(workload=workload, kind="transition", to_status="ready",
                                 created_at=HOUR - timedelta(hours=1), demand={H100: 1})
    return workload


def _copies() -> set[tuple]:
    return set(UsageRecord.objects.filter(source="allocated").values_list(
        "workload__name", "hour", "launched_by__username", "label"))


@pytest.mark.django_db
def test_an_hour_metered_twice_copies_launcher_and_label_once(tenant):
    ada = UserFactory(username="ada")
    _running(tenant, "chat", by=ada, label="support bot")
    _running(tenant, "train", by=None)

    metering.usage_meter_window(source="allocated", hour=HOUR)
    metering.usage_meter_window(source="allocated", hour=HOUR)

    assert _copies() == {("chat", HOUR, "ada", "support bot"), ("train", HOUR, None, "")}
    assert UsageRecord.objects.count() == 2


@pytest.mark.django_db
def test_a_span_metered_in_sql_copies_launcher_and_label(tenant):
    ada = UserFactory(username="ada")
    _running(tenant, "chat", by=ada, label="exp-1.2_b")

    metering.usage_meter_span(start=HOUR, end=HOUR + timedelta(hours=2))
    metering.usage_meter_span(start=HOUR, end=HOUR + timedelta(hours=2))

    assert _copies() == {("chat", HOUR, "ada", "exp-1.2_b"),
                         ("chat", HOUR + timedelta(hours=1), "ada", "exp-1.2_b")}


@pytest.mark.django_db
def test_measured_records_carry_no_launcher_or_label(tenant):
    measurement = Measurement(usage=[
        MeasuredUsage(tenant_id=tenant.pk, hostname="gpu-1", resource=H100,
                      unit_seconds=3600, busy_seconds=1800),
    ], opencost=None, unattributed_seconds=0)

    metering.usage_meter_measurement(hour=HOUR, measurement=measurement)

    assert list(UsageRecord.objects.values_list("launched_by", "label")) == [(None, "")]


@pytest.mark.django_db(transaction=True)
def test_migration_fills_in_the_records_metered_before(tenant):
    ada = UserFactory(username="ada")
    apps = migrate_to([("billing", "0009_usage_record_cluster")])
    try:
        OldRecord = apps.get_model("billing", "UsageRecord")
        # Only billing moved back: workloads have their label (tenants 0025) already.
        chat = Workload.objects.create(tenant=tenant, kind="inference", name="chat",
                                       launched_by=ada, label="support")
        for workload, hostname, source in ((chat.pk, "", "allocated"),
                                           (None, "gpu-1", "measured")):
            OldRecord.objects.create(tenant_id=tenant.pk, workload_id=workload, hostname=hostname,
                                     source=source, resource=H100, hour=HOUR, unit_seconds=60)
    finally:
        migrate_to_latest()

    assert set(UsageRecord.objects.values_list("source", "launched_by__username", "label")) == {
        ("allocated", "ada", "support"), ("measured", None, "")}
