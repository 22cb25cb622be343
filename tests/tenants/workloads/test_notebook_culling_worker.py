"""Unused notebooks stopped as in production: a real `celery beat` sends the cull sweep every
second to a real worker, which reads a real Prometheus (the notebook's route never used for a
day), stops the notebook and applies the stop on the (simulated) cluster; Start undoes it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import OutboxEmail
from tenants.workloads import services
from tenants.workloads.kinds import notebook
from tenants.workloads.models import Workload, WorkloadEvent
from tests.factories import QuotaFactory
from tests.support.fixtures_celery import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _series(end: int) -> dict:
    """The notebook's route: its request counter standing still for 30 hours up to `end`."""
    cluster = f"httproute/tenant-acme/{notebook.notebook_name('lab')}/rule/0"
    return {"envoy_cluster_upstream_rq_total": [(
        {"envoy_cluster_name": cluster, "namespace": "envoy-gateway-system",
         "pod": "envoy-fleet-https-7c9d8b6f5-abcde"},
        [(float(t), 12.0) for t in range(end - 30 * 3600, end + 1, 60)],
    )]}


@pytest.fixture
def lab(tenant, tenant_member):
    """A CPU notebook applied and ready since 30 hours ago."""
    for resource, limit in {"cpu": 64, "memory-gib": 512, "storage-gib": 500,
                            "count:notebook": 2}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    spec = {
        "image": "lab", "custom_image": "", "image_ref": "quay.io/jupyter/base-notebook:2025-11",
        "image_label": "JupyterLab", "interface": "jupyterlab", "cpu": 4, "memory_gib": 16,
        "gpu": "", "gpus": 0, "running": True, "home": "home-alice", "home_gib": 50,
        "home_access_mode": "ReadWriteOnce", "home_storage_class": "",
    }
    since = timezone.now() - timedelta(hours=30)
    workload = Workload.objects.create(
        tenant=tenant, kind=notebook.KEY, name="lab", launched_by=tenant_member, spec=spec,
        demand=notebook.KIND.demand(spec), status=Workload.Status.READY, created_at=since)
    Workload.objects.filter(pk=workload.pk).update(applied_version=workload.desired_version)
    WorkloadEvent.objects.create(workload=workload, kind=WorkloadEvent.Kind.LAUNCHED,
                                 actor=tenant_member, demand=workload.demand, created_at=since)
    return workload


def test_beat_and_a_worker_stop_the_unused_notebook_and_start_undoes_it(
    lab, tenant_member, prometheus_server, celery_worker, celery_beat
):
    server = prometheus_server(_series(int(timezone.now().timestamp())))
    worker = celery_worker(PROMETHEUS_URL=server.url, FLEET_BACKEND="simulated",
                           NOTEBOOK_IDLE_HOURS="24")
    beat = celery_beat("NOTEBOOK_CULL_SWEEP_SECONDS")

    try:
        wait_until(lambda: not Workload.objects.get(pk=lab.pk).spec["running"], timeout=90,
                   every=0.1)
        # The worker applied the stop on the cluster.
        wait_until(lambda: Workload.objects.get(pk=lab.pk).in_sync, timeout=60)
    except AssertionError:
        raise AssertionError(f"worker: {worker.output()}\nbeat: {beat.read_text()}") from None

    stop = lab.events.get(kind=WorkloadEvent.Kind.POWER)
    assert stop.actor is None and stop.message.startswith(
        "Stopped after 24 hours without use: no requests through its URL.")
    assert OutboxEmail.objects.filter(topic="workload.notebook_culled").count() == 1

    services.workload_power(workload_id=lab.pk, actor=tenant_member, action="start")

    # Started just now: the next sweeps leave it running.
    sent = beat.read_text().count("notebooks-cull-sweep")
    wait_until(lambda: beat.read_text().count("notebooks-cull-sweep") >= sent + 3, timeout=30)
    assert Workload.objects.get(pk=lab.pk).spec["running"] is True
    assert lab.events.filter(kind=WorkloadEvent.Kind.POWER).count() == 2
