"""The whole workload cycle through real Celery workers and Redis against the Kubernetes API
emulator over HTTP (the tests play KServe): launch → ready → scale → delete; a launch while
the broker is down; a worker killed mid-apply."""

import time

import pytest
import redis

from portal.celery import app as celery_app
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadEvent, WorkloadStatus
from tests.support.fixtures_celery import CLOSED_PORT_BROKER, celery_broker, wait_until

from .conftest import INFERENCE_SPEC, ready_inference_service

ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
FAST_RECOVERY = {
    "CELERY_VISIBILITY_TIMEOUT": "8",
    "CELERY_TASK_TIME_LIMIT": "4",
    "CELERY_RETRY_BACKOFF_MAX": "2",
    "FLEET_REQUEST_TIMEOUT": "3",
}


@pytest.fixture
def fleet_env(kube_emulator, tmp_path):
    return {
        "FLEET_BACKEND": "kubernetes",
        "KUBECONFIG": str(kube_emulator.write_kubeconfig(tmp_path / "kubeconfig")),
    }


def _status(workload) -> str:
    return Workload.objects.get(pk=workload.pk).status


def _sweep() -> None:
    """What beat does every few seconds: observe every live workload."""
    celery_app.send_task("tenants.workloads.tasks.workloads_observe_sweep_task")


@pytest.mark.worker
def test_launch_ready_scale_delete_through_a_worker(
    celery_worker, fleet_env, kube_emulator, tenant, tenant_member, gpu_pool, workload_quota
):
    workload_quota()
    celery_worker(**fleet_env)
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="chat", spec=INFERENCE_SPEC)

    wait_until(lambda: _status(workload) == WorkloadStatus.PROVISIONING, timeout=30)
    ready_inference_service(kube_emulator, name="chat", namespace=tenant.namespace)
    _sweep()
    wait_until(lambda: _status(workload) == WorkloadStatus.READY, timeout=30)

    services.workload_scale(workload_id=workload.pk, actor=tenant_member,
                            changes={"max_replicas": 4})
    wait_until(lambda: Workload.objects.get(pk=workload.pk).in_sync, timeout=30)
    stored = kube_emulator.get_object(*ISVC, "chat", tenant.namespace)
    assert stored["spec"]["predictor"]["maxReplicas"] == 4

    services.workload_delete(workload_id=workload.pk, actor=tenant_member)
    wait_until(lambda: _status(workload) == WorkloadStatus.DELETED, timeout=30)
    assert kube_emulator.get_object(*ISVC, "chat", tenant.namespace) is None
    applies = kube_emulator.requests("PATCH", f"/apis/serving.kserve.io/v1beta1/namespaces/"
                                              f"{tenant.namespace}/inferenceservices/chat")
    assert len(applies) == 2  # the launch and the scale: no retry storm, nothing twice


@pytest.mark.worker
def test_a_launch_while_the_broker_is_down_is_kept_and_provisioned_once_it_is_back(
    celery_worker, fleet_env, kube_emulator, tenant, tenant_member, gpu_pool, workload_quota
):
    workload_quota()
    with celery_broker(CLOSED_PORT_BROKER):
        workload = services.workload_launch(tenant=tenant, actor=tenant_member,
                                            kind="inference", name="chat", spec=INFERENCE_SPEC)
    assert _status(workload) == WorkloadStatus.PENDING  # kept, its reconcile not queued

    celery_worker(**fleet_env)  # a worker (re)starting queues the sweeps
    wait_until(lambda: _status(workload) == WorkloadStatus.PROVISIONING, timeout=45)
    assert kube_emulator.get_object(*ISVC, "chat", tenant.namespace) is not None


@pytest.mark.worker
def test_an_apply_whose_worker_was_killed_resumes_on_another_worker_once(
    celery_worker, fleet_env, kube_emulator, redis_url, tenant, tenant_member, gpu_pool,
    workload_quota,
):
    workload_quota()
    path = f"/apis/serving.kserve.io/v1beta1/namespaces/{tenant.namespace}/inferenceservices/chat"
    kube_emulator.delay(10, method="PATCH", path=path)  # the worker is inside the apply
    first = celery_worker(**fleet_env, **FAST_RECOVERY)
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="chat", spec=INFERENCE_SPEC)
    wait_until(lambda: kube_emulator.requests("PATCH", path), timeout=30)
    first.kill()
    killed_at = time.monotonic()
    celery_worker(**fleet_env, **FAST_RECOVERY)

    wait_until(lambda: _status(workload) == WorkloadStatus.PROVISIONING, timeout=60)
    assert time.monotonic() - killed_at < 8 + 10 + 10
    unacked = redis.Redis.from_url(redis_url)
    wait_until(lambda: not unacked.hlen("unacked"), timeout=40)
    applied = WorkloadEvent.objects.filter(workload=workload, kind=WorkloadEvent.Kind.APPLIED)
    assert applied.count() == 1  # done once, however many times the message was delivered
