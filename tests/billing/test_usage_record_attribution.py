"""Issue 35, part 4: allocated usage records carry who launched their workload and its label,
copied when metered by every path (an hour, a span in SQL), idempotently; measured records
carry neither; migration 0011 fills them in on the records metered before (0010 adds the
columns only), in batches, writing only the records that lack them."""

import importlib
from datetime import timedelta

import pytest
from django.db import connection

from billing.models import UsageRecord
from billing.services import metering
from billing.services.metering_measured import MeasuredUsage, Measurement
from tenants.workloads.models import Workload, WorkloadEvent
from tests.factories import UserFactory
from tests.support.migrations import migrate_to, migrate_to_latest

from .timeline import utc

BACKFILL = importlib.import_module("billing.migrations.0011_usage_record_attribution_backfill")
COLUMNS = [("billing", "0010_usage_record_launched_by_label")]
BACKFILLED = [("billing", "0011_usage_record_attribution_backfill")]

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


@pytest.mark.django_db(transaction=True)
def test_0010_adds_the_columns_only_and_0011_fills_them_in_outside_its_transaction(tenant):
    ada = UserFactory(username="ada")
    chat = Workload.objects.create(tenant=tenant, kind="inference", name="chat",
                                   launched_by=ada, label="support")
    apps = migrate_to([("billing", "0009_usage_record_cluster")])
    try:
        OldRecord = apps.get_model("billing", "UsageRecord")
        first = OldRecord.objects.create(tenant_id=tenant.pk, workload_id=chat.pk,
                                         source="allocated", resource=H100, hour=HOUR,
                                         unit_seconds=60)
        # Two batches further on: every range of primary keys is visited.
        OldRecord.objects.create(pk=first.pk + 2 * BACKFILL.BATCH + 1, tenant_id=tenant.pk,
                                 workload_id=chat.pk, source="allocated", resource=H100,
                                 hour=HOUR + timedelta(hours=1), unit_seconds=60)
        apps = migrate_to(COLUMNS)
        assert set(apps.get_model("billing", "UsageRecord").objects.values_list(
            "launched_by_id", "label")) == {(None, "")}
    finally:
        migrate_to_latest()

    assert BACKFILL.Migration.atomic is False
    assert list(UsageRecord.objects.values_list("launched_by__username", "label")) == [
        ("ada", "support"), ("ada", "support")]


def _versions() -> dict[int, str]:
    """Each record's row version: PostgreSQL gives a row a new xmin whenever it is written."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, xmin::text FROM billing_usagerecord")
        return dict(cursor.fetchall())


@pytest.mark.django_db(transaction=True)
def test_the_backfill_writes_only_what_records_lack_and_again_nothing(tenant):
    ada, bob = UserFactory(username="ada"), UserFactory(username="bob")
    chat = Workload.objects.create(tenant=tenant, kind="inference", name="chat",
                                   launched_by=ada, label="support")
    plain = Workload.objects.create(tenant=tenant, kind="inference", name="plain")
    apps = migrate_to(COLUMNS)
    try:
        Record = apps.get_model("billing", "UsageRecord")

        def record(n: int, workload, by=None, label="", source="allocated", host=""):
            return Record.objects.create(
                tenant_id=tenant.pk, workload_id=workload and workload.pk, hostname=host,
                launched_by_id=by and by.pk, label=label, source=source, resource=H100,
                hour=HOUR + timedelta(hours=n), unit_seconds=60).pk

        bare, relabel, relaunch, done, nothing, measured = (
            record(0, chat), record(1, chat, by=bob), record(2, chat, label="old"),
            record(3, chat, by=ada, label="support"), record(4, plain),
            record(0, None, source="measured", host="gpu-1"))
        before = _versions()
        migrate_to(BACKFILLED)
        after = _versions()
        # Run again (as on a database whose old 0010 copied them all): nothing is written.
        migrate_to(COLUMNS)
        migrate_to(BACKFILLED)
        again = _versions()
    finally:
        migrate_to_latest()

    values = {pk: (by, label) for pk, by, label in UsageRecord.objects.values_list(
        "pk", "launched_by__username", "label")}
    assert values == {bare: ("ada", "support"), relabel: ("bob", "support"),
                      relaunch: ("ada", "old"), done: ("ada", "support"), nothing: (None, ""),
                      measured: (None, "")}
    assert {pk for pk in before if before[pk] != after[pk]} == {bare, relabel, relaunch}
    assert again == after


@pytest.mark.django_db
def test_deleting_a_user_finds_their_records_by_index(tenant):
    ada = UserFactory(username="ada")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = UsageRecord.objects.filter(launched_by__in=[ada.pk]).explain()
    assert "usage_launched_by_idx" in plan, plan
    # Built concurrently, outside a transaction: metering's writes go on meanwhile.
    index = importlib.import_module("billing.migrations.0012_usage_record_launched_by_index")
    assert index.Migration.atomic is False
