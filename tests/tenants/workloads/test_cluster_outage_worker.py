"""One cluster stops answering; the other's work goes on; it comes back and catches up, once.

Two Kubernetes API emulators over HTTP, two clusters in the database whose credentials are a
kubeconfig file naming each (the real registry and Kubernetes gateway, no override), a real
Celery worker on Redis serving both clusters' queues. A tenant runs an inference endpoint on
each. The "west" emulator goes down (its port closed: connections refused): the probe marks the
cluster unreachable, its workload shows Unknown with since when and why, and launches and
changes on "main" are applied while it is down. West comes back on the same port with what it
stored: the probe marks it reachable, its recovery applies the change made meanwhile, and no
object exists twice. And a cluster that answers slowly, with a worker of its own, holds up no
launch on the other.

The tenant's own objects (namespace, quota, queues) are put on both clusters by its reconcile
on each; each hall has H100 nodes, and the workloads meant for west are launched there.
"""

import time
from collections.abc import Iterator

import pytest
from django.db import transaction

from core.models import AuditEvent
from inventory.models import Cluster
from portal.celery import app as celery_app
from tenants.enforcement.services import tenant_reconcile
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus
from tests.factories import GPUFactory, NodeFactory
from tests.support.clusters import emulated_cluster
from tests.support.fixtures_celery import CLOSED_PORT_BROKER, celery_broker, wait_until
from tests.support.kube_emulator import KubeEmulator, running_kube_emulator

from .conftest import H100, INFERENCE_SPEC, ready_inference_service

ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
ISVC_PATH = "/apis/serving.kserve.io/v1beta1/namespaces/{ns}/inferenceservices/{name}"
QUICK = {
    "FLEET_BACKEND": "kubernetes",
    "FLEET_REQUEST_TIMEOUT": "3",
    "CLUSTER_BACKOFF_SECONDS": "1",
    "CLUSTER_BACKOFF_MAX_SECONDS": "2",
    "CELERY_RETRY_BACKOFF_MAX": "2",
}


@pytest.fixture
def west_emulator() -> Iterator[KubeEmulator]:
    with running_kube_emulator() as emulator:
        yield emulator


@pytest.fixture
def fleet(settings, kube_emulator, west_emulator, tmp_path, tenant, gpu_pool, workload_quota):
    """Cluster main at one emulator, west at the other, each with two nodes of 8 H100s; the
    tenant's quota is fleet-wide, and its reconcile on each cluster puts its objects there."""
    settings.FLEET_BACKEND = "kubernetes"
    emulated_cluster(kube_emulator, "main", tmp_path, name="Main hall")
    emulated_cluster(west_emulator, "west", tmp_path, name="West hall")
    for _ in range(2):
        node = NodeFactory(cluster_id="west", reserved_for="")
        for index in range(8):
            GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    workload_quota(**{"count:inference": 4, H100: 16, "cpu": 200, "memory-gib": 2000})
    for cluster in ("main", "west"):
        tenant_reconcile(tenant_id=tenant.pk, cluster=cluster)
    assert west_emulator.get_object("v1", "Namespace", tenant.namespace)
    return {"main": kube_emulator, "west": west_emulator}


def _workload(pk: int) -> Workload:
    return Workload.objects.select_related("cluster").get(pk=pk)


def _isvc_names(emulator: KubeEmulator) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in emulator.list_objects(*ISVC))


def _asking_until(task: str, condition, *, timeout: float = 40) -> None:
    """Send the sweep `task` every second or two (as beat does) until `condition` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        celery_app.send_task(task)
        for _ in range(6):
            if condition():
                return
            time.sleep(0.25)
    raise AssertionError(f"not seen within {timeout} s: {condition}")


def _probe_until(condition) -> None:
    """Probe the clusters (each on its own queue) until `condition` holds."""
    _asking_until("inventory.tasks.clusters_probe_sweep_task", condition)


def _observe_until(condition) -> None:
    """Observe the workloads (each cluster's sweep on its queue) until `condition` holds."""
    _asking_until("tenants.workloads.tasks.workloads_observe_sweep_task", condition)


@pytest.mark.worker
def test_a_cluster_going_away_is_its_own_problem_and_it_catches_up_once_it_is_back(
    celery_worker, fleet, tenant, tenant_member, api_client, client
):
    main, west = fleet["main"], fleet["west"]
    ns = tenant.namespace
    # Launched while the broker is down (nothing queued yet), one on each cluster.
    with celery_broker(CLOSED_PORT_BROKER):
        near = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="near", spec=INFERENCE_SPEC, cluster="main")
        far = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                       name="far", spec=INFERENCE_SPEC, cluster="west")
    worker = celery_worker(**QUICK)
    with transaction.atomic():
        services.workloads_reconcile_sweep()  # each on its own cluster's queue
    wait_until(lambda: _workload(near.pk).status == WorkloadStatus.PROVISIONING, timeout=60)
    wait_until(lambda: _workload(far.pk).status == WorkloadStatus.PROVISIONING, timeout=30)
    assert (_isvc_names(main), _isvc_names(west)) == (["near"], ["far"])
    ready_inference_service(main, name="near", namespace=ns)
    ready_inference_service(west, name="far", namespace=ns)
    _observe_until(lambda: {_workload(near.pk).status, _workload(far.pk).status}
                   == {WorkloadStatus.READY})

    # West goes away: the probe notices, its workload is Unknown (since when, and why).
    west.down()
    _probe_until(lambda: not Cluster.objects.get(slug="west").reachable)
    down = Cluster.objects.get(slug="west")
    assert down.last_error and down.unreachable_since and down.failures >= 1
    assert Cluster.objects.get(slug="main").reachable
    api_client.force_login(tenant_member)
    shown = api_client.get(f"/api/v1/workloads/{far.pk}/").json()
    assert shown["status"] == "ready" and shown["cluster_unreachable"] is True
    since = down.unreachable_since.strftime("%Y-%m-%d %H:%M UTC")
    assert shown["status_detail"].startswith(
        f"Unknown — cluster West hall unreachable since {since}: "
    )
    assert api_client.get(f"/api/v1/workloads/{near.pk}/").json()["cluster_unreachable"] is False
    client.force_login(tenant_member)
    page = client.get(f"/t/{tenant.slug}/workloads/{far.pk}/").content.decode()
    assert 'id="cluster-unreachable"' in page and "cluster West hall unreachable since" in page

    # Meanwhile on main: a launch and a change are applied; west's change waits.
    started = time.monotonic()
    more = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                    name="more", spec=INFERENCE_SPEC)  # the portal's choice
    services.workload_scale(workload_id=near.pk, actor=tenant_member,
                            changes={"max_replicas": 4})
    services.workload_scale(workload_id=far.pk, actor=tenant_member,
                            changes={"max_replicas": 3})
    wait_until(lambda: _workload(more.pk).status == WorkloadStatus.PROVISIONING, timeout=30)
    wait_until(lambda: _workload(near.pk).in_sync, timeout=30)
    assert time.monotonic() - started < 30
    assert main.get_object(*ISVC, "near", ns)["spec"]["predictor"]["maxReplicas"] == 4
    assert _isvc_names(main) == ["more", "near"]
    # Failed fast, or (its next try due) refused: either way recorded, and retried later.
    error = wait_until(lambda: _workload(far.pk).reconcile_error, timeout=30)
    assert "unreachable since" in error or "Connection refused" in error
    assert not _workload(far.pk).in_sync

    # West is back, with what it stored: the probe marks it reachable, its recovery applies
    # the change it missed, and nothing is there twice.
    west.up()
    _probe_until(lambda: Cluster.objects.get(slug="west").reachable)
    wait_until(lambda: _workload(far.pk).in_sync, timeout=40)
    assert west.get_object(*ISVC, "far", ns)["spec"]["predictor"]["maxReplicas"] == 3
    assert (_isvc_names(main), _isvc_names(west)) == (["more", "near"], ["far"])
    applies = west.requests("PATCH", ISVC_PATH.format(ns=ns, name="far"))
    assert len(applies) == 2  # the launch and the change: once each
    recovered = api_client.get(f"/api/v1/workloads/{far.pk}/").json()
    assert recovered["cluster_unreachable"] is False and recovered["status_detail"] == ""
    assert AuditEvent.objects.filter(action="cluster.unreachable").count() == 1
    assert AuditEvent.objects.filter(action="cluster.reachable").count() == 1
    worker.stop()


@pytest.mark.worker
def test_a_slow_cluster_fills_only_its_own_queue_when_it_has_workers_of_its_own(
    celery_worker, fleet, tenant, tenant_member
):
    main, west = fleet["main"], fleet["west"]
    env = QUICK | {"FLEET_REQUEST_TIMEOUT": "12"}
    celery_worker(**env, CELERY_WORKER_CLUSTERS="main")
    celery_worker(**env, CELERY_WORKER_CLUSTERS="west")
    warm = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                    name="warm", spec=INFERENCE_SPEC, cluster="main")
    wait_until(lambda: _workload(warm.pk).status == WorkloadStatus.PROVISIONING, timeout=60)
    # West answers, slowly: its endpoint's write takes eight seconds (within the timeout).
    ns = tenant.namespace
    west.delay(8, method="PATCH", path=ISVC_PATH.format(ns=ns, name="slow"))
    slow = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                    name="slow", spec=INFERENCE_SPEC, cluster="west")
    # West's worker is inside the endpoint's (slow) apply.
    wait_until(lambda: west.requests("PATCH", ISVC_PATH.format(ns=ns, name="slow")),
               timeout=30)

    started = time.monotonic()
    quick = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                     name="quick", spec=INFERENCE_SPEC, cluster="main")
    wait_until(lambda: _workload(quick.pk).status == WorkloadStatus.PROVISIONING, timeout=20)
    took = time.monotonic() - started
    # Main's launch did not wait behind west's write, which is still held.
    assert took < 6 and _workload(slow.pk).status == WorkloadStatus.PENDING
    assert _isvc_names(main) == ["quick", "warm"]
    assert Cluster.objects.get(slug="west").reachable  # slow is not unreachable
