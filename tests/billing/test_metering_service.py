"""Allocated metering from real workload histories: a VM launched, ready mid-hour, scaled
mid-hour, stopped (its disk stays) and deleted on the simulated fleet through the real
services, its events then placed on a timeline; windows metered twice, late events absorbed,
a workload across a month boundary, and the sweep that finds what is due."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from billing.models import Invoice, MeteringWindow, UsageRecord
from billing.selectors.usage import usage_amounts
from billing.services import metering
from core.errors import RuleViolation
from core.models import AuditEvent
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadEvent, WorkloadStatus
from tests.factories import GPUFactory, NodeFactory, QuotaFactory
from tests.tenants.workloads.openssh_keys import ed25519_public

from .timeline import utc

H100 = "gpu:nvidia-h100-80gb"
VM_SPEC = {"custom_image": "quay.io/containerdisks/ubuntu:24.04", "default_user": "ubuntu",
           "cpu": 4, "memory_gib": 16, "disk_gib": 40, "gpu": H100, "gpus": 1, "running": True}
ALLOCATED = UsageRecord.Source.ALLOCATED


@pytest.fixture
def fleet(settings, tenant, fleet_clock):
    """The simulated fleet with its clock in the test's hands, eight H100s, and quota."""
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    node = NodeFactory(reserved_for="")
    for index in range(8):
        GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    for resource, limit in {H100: 4, "cpu": 32, "memory-gib": 256, "storage-gib": 200,
                            "count:vm": 2}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    return fleet_clock


class Timeline:
    """Places the events each step of the story made at the moment the story says."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.mark = 0

    def at(self, moment) -> None:
        events = WorkloadEvent.objects.filter(workload=self.workload, pk__gt=self.mark)
        assert events.exists()
        self.mark = max(events.values_list("pk", flat=True))
        events.update(created_at=moment)


def run_vm_story(fleet, tenant, who, *, name="box", ready, scaled, stopped, deleted) -> Workload:
    """launch → ready → scale (4 → 8 vCPUs, 16 → 32 GiB) → stop (disk only) → delete."""
    workload = services.workload_launch(tenant=tenant, actor=who, kind="vm", name=name,
                                        spec={**VM_SPEC, "ssh_public_key": ed25519_public()})
    services.workload_reconcile(workload_id=workload.pk)
    story = Timeline(workload)
    story.at(ready - timedelta(minutes=25))  # launched and applied well before it came up
    fleet.advance(20)
    services.workload_observe(workload_id=workload.pk)
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.READY
    story.at(ready)
    services.workload_scale(workload_id=workload.pk, actor=who,
                            changes={"cpu": 8, "memory_gib": 32})
    services.workload_reconcile(workload_id=workload.pk)
    story.at(scaled)
    services.workload_power(workload_id=workload.pk, actor=who, action="stop")
    services.workload_reconcile(workload_id=workload.pk)
    story.at(stopped)
    services.workload_delete(workload_id=workload.pk, actor=who)
    for _ in range(3):
        services.workload_reconcile(workload_id=workload.pk)
        workload.refresh_from_db()
        if workload.status == WorkloadStatus.DELETED:
            break
    assert workload.status == WorkloadStatus.DELETED
    story.at(deleted)
    Workload.objects.filter(pk=workload.pk).update(ready_at=ready, deleted_at=deleted)
    return workload


def stored(source=ALLOCATED) -> dict:
    return {
        (r.workload_id, r.resource, r.hour): r.unit_seconds
        for r in UsageRecord.objects.filter(source=source)
    }


def meter_hours(first, count: int) -> list[MeteringWindow]:
    return [metering.usage_meter_window(source=ALLOCATED, hour=first + timedelta(hours=h))
            for h in range(count)]


@pytest.fixture
def vm_story(fleet, tenant, tenant_member):
    return run_vm_story(
        fleet, tenant, tenant_member,
        ready=utc(2026, 3, 3, 10, 15), scaled=utc(2026, 3, 3, 10, 40, 30),
        stopped=utc(2026, 3, 3, 11, 20), deleted=utc(2026, 3, 3, 12, 5, 15),
    )


@pytest.mark.django_db
def test_a_vms_life_is_metered_from_ready_to_deleted_with_exact_partial_hours(vm_story):
    windows = meter_hours(utc(2026, 3, 3, 9), 5)

    w, h = vm_story.pk, utc(2026, 3, 3, 10)
    assert stored() == {
        # 10:15 ready; 10:40:30 scaled: 1 530 s at the old size, 1 170 s at the new one
        (w, H100, h): 2700,
        (w, "cpu", h): 1530 * 4 + 1170 * 8,  # 6 120 + 9 360 = 15 480
        (w, "memory-gib", h): 1530 * 16 + 1170 * 32,  # 24 480 + 37 440 = 61 920
        (w, "storage-gib", h): 2700 * 40,  # 108 000
        # 11:00-11:20 running, then stopped: only its 40 GiB disk, to the end of the hour
        (w, H100, h + timedelta(hours=1)): 1200,
        (w, "cpu", h + timedelta(hours=1)): 1200 * 8,
        (w, "memory-gib", h + timedelta(hours=1)): 1200 * 32,
        (w, "storage-gib", h + timedelta(hours=1)): 3600 * 40,
        # 12:00-12:05:15 the stopped VM's disk until it was deleted
        (w, "storage-gib", h + timedelta(hours=2)): 315 * 40,
    }
    # Nothing before ready (09:00: launched, provisioning), nothing after deletion (13:00);
    # no `count:vm` (quota, not usage).
    assert [(win.records, win.status) for win in windows] == [
        (0, "done"), (4, "done"), (4, "done"), (1, "done"), (0, "done"),
    ]
    assert windows[1].unit_seconds == 2700 + 15480 + 61920 + 108000
    assert UsageRecord.objects.get(resource=H100, hour=h).tenant == vm_story.tenant


@pytest.mark.django_db
def test_metering_a_window_twice_gives_identical_rows_and_totals(vm_story):
    first = meter_hours(utc(2026, 3, 3, 10), 3)
    rows = stored()
    again = meter_hours(utc(2026, 3, 3, 10), 3)

    assert stored() == rows
    assert UsageRecord.objects.count() == len(rows) == 9
    assert [w.unit_seconds for w in again] == [w.unit_seconds for w in first]
    assert [w.attempts for w in again] == [2, 2, 2]
    assert MeteringWindow.objects.count() == 3
    # One audit event per window metered, by the system.
    events = AuditEvent.objects.filter(action="usage.meter")
    assert events.count() == 6 and set(events.values_list("actor_repr", flat=True)) == {"system"}
    assert events.order_by("id").last().changes["before"]["unit_seconds"] == again[-1].unit_seconds


@pytest.mark.django_db
def test_a_late_event_is_absorbed_by_metering_the_window_again(vm_story):
    hour = utc(2026, 3, 3, 11)
    metering.usage_meter_window(source=ALLOCATED, hour=hour)
    assert stored()[vm_story.pk, H100, hour] == 1200

    # An event recorded late: the VM had been given a second GPU at 11:10.
    held = {**vm_story.events.get(kind="scaled").demand, H100: 2}
    WorkloadEvent.objects.create(workload=vm_story, kind="scaled", demand=held,
                                 created_at=utc(2026, 3, 3, 11, 10))
    metering.usage_meter_window(source=ALLOCATED, hour=hour)

    assert stored()[vm_story.pk, H100, hour] == 600 * 1 + 600 * 2
    assert UsageRecord.objects.filter(hour=hour, resource=H100).count() == 1


@pytest.mark.django_db
def test_a_workload_across_two_months_is_cut_at_the_month_boundary(
    fleet, tenant, tenant_member
):
    workload = run_vm_story(
        fleet, tenant, tenant_member, name="late",
        ready=utc(2026, 3, 31, 23, 30), scaled=utc(2026, 4, 1, 0, 10),
        stopped=utc(2026, 4, 1, 0, 20), deleted=utc(2026, 4, 1, 0, 45),
    )
    meter_hours(utc(2026, 3, 31, 23), 2)

    march = usage_amounts(tenant_ids=[tenant.pk], start=utc(2026, 3, 1), end=utc(2026, 4, 1))
    april = usage_amounts(tenant_ids=[tenant.pk], start=utc(2026, 4, 1), end=utc(2026, 5, 1))
    gpu = {a.hour_start: a.unit_seconds for a in march[tenant.pk] + april[tenant.pk]
           if a.resource == H100}
    assert gpu == {utc(2026, 3, 31, 23): 1800, utc(2026, 4, 1, 0): 1200}
    disk = {a.hour_start: a.unit_seconds for a in march[tenant.pk] + april[tenant.pk]
            if a.resource == "storage-gib"}
    assert disk == {utc(2026, 3, 31, 23): 1800 * 40, utc(2026, 4, 1, 0): 2700 * 40}
    assert {r.workload_id for r in UsageRecord.objects.all()} == {workload.pk}


@pytest.mark.django_db
def test_a_workload_that_never_became_ready_costs_nothing(fleet, tenant, tenant_member):
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vm",
                                        name="stuck",
                                        spec={**VM_SPEC, "ssh_public_key": ed25519_public()})
    services.workload_reconcile(workload_id=workload.pk)  # provisioning, never ready
    WorkloadEvent.objects.filter(workload=workload).update(created_at=utc(2026, 3, 3, 10, 5))
    Workload.objects.filter(pk=workload.pk).update(created_at=utc(2026, 3, 3, 10, 5))

    window = metering.usage_meter_window(source=ALLOCATED, hour=utc(2026, 3, 3, 10))

    assert window.status == "done" and window.records == 0


@pytest.mark.django_db
def test_metering_many_workloads_takes_the_same_few_queries(
    tenant, other_tenant, django_assert_max_num_queries
):
    def workloads(count: int) -> None:
        for index in range(count):
            workload = Workload.objects.create(
                tenant=tenant if index % 2 else other_tenant, kind="vm", name=f"w{count}-{index}",
                demand={H100: 1, "cpu": 2}, ready_at=utc(2026, 3, 3, 9),
            )
            WorkloadEvent.objects.create(workload=workload, kind="transition", to_status="ready",
                                         demand=workload.demand, created_at=utc(2026, 3, 3, 9))
            WorkloadEvent.objects.create(workload=workload, kind="scaled",
                                         demand={H100: 2, "cpu": 2},
                                         created_at=utc(2026, 3, 3, 10, 30))

    workloads(2)
    with django_assert_max_num_queries(14) as few:
        metering.usage_meter_window(source=ALLOCATED, hour=utc(2026, 3, 3, 10))
    workloads(20)
    with django_assert_max_num_queries(len(few.captured_queries)):
        window = metering.usage_meter_window(source=ALLOCATED, hour=utc(2026, 3, 3, 10))
    assert window.records == 22 * 2
    assert window.unit_seconds == 22 * (1800 + 3600 + 7200)


@pytest.mark.django_db
def test_an_hour_not_ended_or_not_on_the_hour_is_refused(tenant):
    from django.utils import timezone

    from billing.calculations.money import floor_hour

    with pytest.raises(RuleViolation, match="has not ended"):
        metering.usage_meter_window(source=ALLOCATED, hour=floor_hour(timezone.now()))
    with pytest.raises(ValidationError) as refused:
        metering.usage_meter_window(source=ALLOCATED, hour=utc(2026, 3, 3, 10, 30))
    assert "hour" in refused.value.message_dict
    with pytest.raises(ValidationError) as refused:
        metering.usage_meter_window(source="guessed", hour=utc(2026, 3, 3, 10))
    assert "source" in refused.value.message_dict
    assert not MeteringWindow.objects.exists()


@pytest.mark.django_db
def test_the_sweep_meters_each_closed_hour_of_the_open_billing_periods_once(settings, vm_story):
    settings.PROMETHEUS_URL = ""  # measured metering off: only allocated windows
    settings.METERING_LOOKBACK_HOURS = 6
    settings.METERING_MAX_WINDOWS_PER_RUN = 4  # bounds the measured windows, not these
    now = utc(2026, 3, 3, 13, 5)

    # Every hour from February's first (its invoices are still open) to 12:00, in one run.
    assert metering.usage_meter_due(now=now) == 28 * 24 + 2 * 24 + 13
    assert metering.usage_meter_due(now=now) == 0  # nothing left: 13:00 has not ended

    hours = sorted(MeteringWindow.objects.values_list("hour", flat=True))
    assert hours[0] == utc(2026, 2, 1, 0) and hours[-1] == utc(2026, 3, 3, 12)
    assert len(set(hours)) == len(hours) == 28 * 24 + 2 * 24 + 13
    assert not MeteringWindow.objects.filter(source="measured").exists()
    assert MeteringWindow.objects.exclude(status="done").count() == 0
    assert sum(stored().values()) == sum(
        MeteringWindow.objects.values_list("unit_seconds", flat=True)
    )


@pytest.mark.django_db
def test_the_sweep_fills_a_gap_far_behind_the_look_back_in_a_month_with_a_draft(
    settings, vm_story, tenant
):
    """A window of January that failed, weeks ago: the look-back (48 h) would never see it
    again; the draft of January keeps the month open, so the sweep meters it."""
    settings.PROMETHEUS_URL = ""
    now = utc(2026, 3, 3, 13, 5)
    metering.usage_meter_due(now=now)
    assert not MeteringWindow.objects.filter(hour__lt=utc(2026, 2, 1)).exists()
    Invoice.objects.create(tenant=tenant, period_start=utc(2026, 1, 1),
                           period_end=utc(2026, 2, 1), tenant_name=tenant.name, currency="EUR")
    MeteringWindow.objects.create(source="allocated", hour=utc(2026, 1, 20, 5), status="gap",
                                  last_error="the database was restarted")

    assert metering.usage_meter_due(now=now) == 31 * 24

    assert MeteringWindow.objects.filter(
        hour__gte=utc(2026, 1, 1), hour__lt=utc(2026, 2, 1), status="done"
    ).count() == 31 * 24


@pytest.mark.django_db
def test_the_sweep_starts_no_earlier_than_metering_start(settings, tenant):
    settings.PROMETHEUS_URL = ""
    settings.METERING_START = utc(2026, 3, 3, 11, 30)

    metering.usage_meter_due(now=utc(2026, 3, 3, 14, 0))

    assert sorted(MeteringWindow.objects.values_list("hour", flat=True)) == [
        utc(2026, 3, 3, 12), utc(2026, 3, 3, 13)
    ]
