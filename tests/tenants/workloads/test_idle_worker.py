"""The idle policy's whole cycle as it runs in production: a real `celery beat` sends the idle
sweep every second to a real worker, which reads a real Prometheus (DCGM series of an idle
endpoint), warns its owners, gives its GPUs back once the grace period is over; the undo from
the workload's page is applied on the cluster by the worker, and the next sweeps leave it be."""

import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from core.models import AuditEvent, OutboxEmail
from tenants.workloads import services
from tenants.workloads.models import IdleEpisode, IdleMode, IdlePolicy, Workload, WorkloadEvent
from tests.factories import QuotaFactory
from tests.support.fixtures_celery import wait_until

from .conftest import H100, INFERENCE_SPEC

pytestmark = pytest.mark.django_db(transaction=True)
E = IdleEpisode.State


def _series(end: int) -> dict:
    """Three idle GPUs of the endpoint's pods, every 30 s for three hours up to `end`."""
    samples = [(float(t), 1.0) for t in range(end - 3 * 3600, end + 1, 30)]
    return {"DCGM_FI_DEV_GPU_UTIL": [
        ({"gpu": str(n), "UUID": f"GPU-chat-{n}", "Hostname": "gpu-a-001",
          "modelName": "NVIDIA H100 80GB HBM3", "namespace": "tenant-acme",
          "pod": f"chat-predictor-5d8f9c7b6-{n}bcde", "container": "main"}, samples)
        for n in range(3)
    ]}


@pytest.fixture
def start():
    """The test's start (the series' last sample), taken when it runs, not when it is
    collected: the sweep reads the window up to its own now."""
    return timezone.now().replace(microsecond=0)


@pytest.fixture
def beat(celery_beat):
    return celery_beat("IDLE_GPU_SWEEP_SECONDS")


@pytest.fixture
def chat(tenant, tenant_member, tenant_owner, gpu_pool, start):
    for resource, limit in {H100: 8, "cpu": 64, "memory-gib": 512, "count:inference": 2}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    IdlePolicy.objects.create(tenant=tenant, mode=IdleMode.ACT, threshold_percent=5,
                              window_minutes=60, grace_minutes=0)
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="chat", spec={**INFERENCE_SPEC, "max_replicas": 3})
    ready_since = start - timedelta(hours=3)
    # As the controllers left it three hours ago: applied, ready.
    Workload.objects.filter(pk=workload.pk).update(
        status=Workload.Status.READY, applied_version=workload.desired_version,
        created_at=ready_since)
    WorkloadEvent.objects.filter(workload=workload).update(created_at=ready_since)
    return workload


def test_beat_and_a_worker_warn_then_give_back_and_the_undo_is_applied(
    chat, tenant_member, prometheus_server, celery_worker, beat, start
):
    server = prometheus_server(_series(int(start.timestamp())))
    worker = celery_worker(PROMETHEUS_URL=server.url, FLEET_BACKEND="simulated")

    def episode() -> IdleEpisode | None:
        return IdleEpisode.objects.filter(workload=chat).first()

    try:
        wait_until(lambda: episode() and episode().state == E.ACTED, timeout=90, every=0.1)
    except AssertionError:
        raise AssertionError(f"worker: {worker.output()}\nbeat: {beat.read_text()}") from None

    acted = episode()
    assert acted.warned_at <= acted.acted_at and acted.reclaimed == 2
    chat.refresh_from_db()
    assert chat.spec["max_replicas"] == 1 and chat.demand[H100] == 1
    assert OutboxEmail.objects.filter(topic="workload.idle_warned").count() == 1
    assert set(AuditEvent.objects.filter(action__startswith="workload.idle").values_list(
        "action", flat=True)) == {"workload.idle_warned", "workload.idle_acted"}
    # The worker applied the smaller endpoint on the cluster.
    wait_until(lambda: Workload.objects.get(pk=chat.pk).in_sync, timeout=60)

    services.idle_undo(episode_id=acted.pk, actor=tenant_member)

    chat.refresh_from_db()
    assert chat.spec["max_replicas"] == 3 and chat.demand[H100] == 3
    wait_until(lambda: Workload.objects.get(pk=chat.pk).in_sync, timeout=60)
    # Resized just now: the next sweeps see no idle window yet, and open nothing new.
    sent = beat.read_text().count("workloads-idle-sweep")
    wait_until(lambda: beat.read_text().count("workloads-idle-sweep") >= sent + 3, timeout=30)
    time.sleep(1)
    assert [e.state for e in IdleEpisode.objects.filter(workload=chat)] == [E.UNDONE]
    assert Decimal(Workload.objects.get(pk=chat.pk).gpu_utilization) == Decimal("1.00")
