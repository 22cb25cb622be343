"""The observe sweep against the Kubernetes API emulator: it writes only the workloads whose
state changed, records its own time once, and `observed_at` (API) is still when the portal last
saw each workload."""

import re
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.fleet import FleetError
from tenants.workloads import services
from tenants.workloads.models import ObserveSweep, Workload, WorkloadEvent, WorkloadStatus

from .conftest import (
    H100,
    INFERENCE_SPEC,
    VM_SPEC,
    ready_inference_service,
    run_vm,
    ssh_public_key,
)

ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
NAMES = ("chat", "code", "docs")


@pytest.fixture
def endpoints(tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator):
    """Three inference endpoints, launched, applied and ready."""
    workload_quota(**{H100: 8})
    workloads = []
    for name in NAMES:
        workload = services.workload_launch(tenant=tenant, actor=tenant_member,
                                            kind="inference", name=name, spec=INFERENCE_SPEC)
        services.workload_reconcile(workload_id=workload.pk)
        ready_inference_service(kube_emulator, name=name, namespace=tenant.namespace)
        services.workload_observe(workload_id=workload.pk)
        workloads.append(workload)
    assert {w.status for w in Workload.objects.all()} == {WorkloadStatus.READY}
    return workloads


def _workload_writes(queries) -> list[str]:
    table = Workload._meta.db_table
    return [q["sql"] for q in queries.captured_queries
            if q["sql"].startswith(("UPDATE", "INSERT", "DELETE")) and f'"{table}"' in
            q["sql"].split(" SET ")[0].split(" WHERE ")[0]]


def _seen(workload) -> datetime:
    return Workload.objects.with_observed_at().get(pk=workload.pk).observed_at


@pytest.mark.django_db
def test_a_sweep_over_unchanged_workloads_writes_no_workload_row_and_records_its_time_once(
    endpoints,
):
    rows = {w.pk: Workload.objects.get(pk=w.pk) for w in endpoints}
    events = WorkloadEvent.objects.count()
    started = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        assert services.workloads_observe_sweep() == len(NAMES)
    assert _workload_writes(queries) == []
    assert not any("FOR UPDATE" in q["sql"] for q in queries.captured_queries)
    sweep = ObserveSweep.objects.get()
    assert (sweep.observed, sweep.changed) == (len(NAMES), 0)
    assert sweep.started_at >= started
    for workload in endpoints:
        after = Workload.objects.get(pk=workload.pk)
        assert after.observation_recorded_at == rows[workload.pk].observation_recorded_at
        assert after.observed == rows[workload.pk].observed
        # When the portal last saw it is the sweep's time, later than its own last record.
        assert _seen(workload) == sweep.started_at > after.observation_recorded_at
    assert WorkloadEvent.objects.count() == events

    # The next sweep moves the one row on: still nothing written to the workloads, and
    # whatever their number three statements: the live ones, the deletions, the sweep's row.
    with CaptureQueriesContext(connection) as queries:
        services.workloads_observe_sweep()
    assert _workload_writes(queries) == []
    assert len(queries.captured_queries) == 3, [q["sql"] for q in queries.captured_queries]
    assert ObserveSweep.objects.count() == 1
    assert _seen(endpoints[0]) == ObserveSweep.objects.get().started_at > sweep.started_at

    # A sweep that began earlier and finished later does not move the row back.
    from tenants.workloads.services.reconcile import _record_sweep

    latest = ObserveSweep.objects.get().started_at
    _record_sweep(cluster="main", started=latest - timedelta(seconds=5), observed=1, changed=0)
    assert ObserveSweep.objects.get().started_at == latest


@pytest.mark.django_db
def test_a_sweep_writes_the_workload_whose_state_changed_and_only_it(
    endpoints, tenant, kube_emulator
):
    changed = endpoints[1]
    kube_emulator.patch_object(*ISVC, changed.name, tenant.namespace, patch={"status": {
        "conditions": [{"type": "Ready", "status": "False", "reason": "ModelLoadFailed",
                        "message": "out of memory"}]}})
    with CaptureQueriesContext(connection) as queries:
        services.workloads_observe_sweep()
    writes = _workload_writes(queries)
    assert writes and all(f"= {changed.pk}" in sql or f"({changed.pk})" in sql for sql in writes)
    assert ObserveSweep.objects.get().changed == 1
    after = Workload.objects.get(pk=changed.pk)
    assert after.status != WorkloadStatus.READY
    assert after.observation_recorded_at >= ObserveSweep.objects.get().started_at
    assert _seen(changed) == after.observation_recorded_at


@pytest.mark.django_db
def test_the_api_shows_when_the_sweep_last_saw_each_workload(
    endpoints, api_client, tenant_member
):
    services.workloads_observe_sweep()
    swept = ObserveSweep.objects.get().started_at
    api_client.force_login(tenant_member)
    listed = api_client.get("/api/v1/workloads/").json()["results"]
    assert {row["name"]: row["observed_at"] for row in listed} == {
        name: swept.isoformat().replace("+00:00", "Z") for name in NAMES
    }
    one = api_client.get(f"/api/v1/workloads/{endpoints[0].pk}/").json()
    assert one["observed_at"] == swept.isoformat().replace("+00:00", "Z")


@pytest.mark.django_db
def test_a_workload_the_sweep_did_not_cover_keeps_its_own_time(
    endpoints, tenant, tenant_member
):
    services.workloads_observe_sweep()
    swept = ObserveSweep.objects.get().started_at
    # Applied again after the sweep began (a scale): the sweep did not see this version.
    later = endpoints[0]
    Workload.objects.filter(pk=later.pk).update(applied_at=swept + timedelta(seconds=1))
    assert _seen(later) == Workload.objects.get(pk=later.pk).observation_recorded_at < swept
    # Deleting: the sweeps no longer look at it; when they last saw it stays on its row.
    services.workload_delete(workload_id=endpoints[1].pk, actor=tenant_member)
    deleting = Workload.objects.get(pk=endpoints[1].pk)
    assert deleting.observation_recorded_at == swept == _seen(deleting)
    services.workloads_observe_sweep()
    assert _seen(deleting) == swept < ObserveSweep.objects.get().started_at


@pytest.mark.django_db
def test_a_sweep_that_misses_a_workload_claims_none_and_writes_those_it_saw(
    endpoints, tenant, tenant_member, kube_emulator
):
    # A VM asked to restart: the look that finds its old instance deletes it, and the
    # cluster refuses that delete (each time).
    vm = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vm", name="box",
                                  spec={**VM_SPEC, "ssh_public_key": ssh_public_key()})
    services.workload_reconcile(workload_id=vm.pk)
    run_vm(kube_emulator, name="box", namespace=tenant.namespace)
    services.workload_observe(workload_id=vm.pk)
    services.workloads_observe_sweep()
    before = ObserveSweep.objects.get()
    services.workload_power(workload_id=vm.pk, actor=tenant_member, action="restart")
    kube_emulator.fail(403, method="DELETE", times=99, path=re.compile(
        r".*/virtualmachineinstances/box$"))
    with pytest.raises(FleetError):
        services.workload_reconcile(workload_id=vm.pk)
    missed = Workload.objects.get(pk=vm.pk)

    services.workloads_observe_sweep()
    assert ObserveSweep.objects.get().started_at == before.started_at  # not moved on
    # Still what its own last look said: no sweep since its restart was applied saw it.
    assert Workload.objects.get(pk=vm.pk).observation_recorded_at == missed.observation_recorded_at
    assert _seen(missed) == missed.observation_recorded_at
    for seen in endpoints:  # the ones it did see say so on their rows
        assert _seen(seen) == Workload.objects.get(pk=seen.pk).observation_recorded_at
        assert _seen(seen) > before.started_at


@pytest.mark.django_db
def test_a_detail_page_asks_for_a_look_only_when_no_sweep_saw_it_just_now(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota()
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="chat", spec=INFERENCE_SPEC)
    services.workload_reconcile(workload_id=workload.pk)
    workload.refresh_from_db()
    assert workload.in_progress
    Workload.objects.filter(pk=workload.pk).update(
        observation_recorded_at=timezone.now() - timedelta(minutes=1),
        applied_at=timezone.now() - timedelta(minutes=1),
    )
    services.workloads_observe_sweep()
    assert not services.workload_refresh(workload=workload)  # the sweep has just looked
    ObserveSweep.objects.update(started_at=timezone.now() - timedelta(seconds=30))
    assert services.workload_refresh(workload=workload)
