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

from .conftest import (
    INFERENCE_SPEC,
    SLURM_SPEC,
    VM_SPEC,
    ready_inference_service,
    run_slurm,
    run_vm,
    ssh_public_key,
)

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


def _observed(condition, *, timeout: float = 40) -> None:
    """Wait for what the next looks will see, asking for a look every two seconds as beat
    does every WORKLOAD_OBSERVE_SECONDS (observations, and a deleting workload's teardown)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _sweep()
        for _ in range(8):
            if condition():
                return
            time.sleep(0.25)
    raise AssertionError(f"not seen within {timeout} s: {condition}")


VM = ("kubevirt.io/v1", "VirtualMachine")
VMI = ("kubevirt.io/v1", "VirtualMachineInstance")
SLINKY = "slinky.slurm.net/v1beta1"


def _vm(kube_emulator, namespace: str) -> dict | None:
    return kube_emulator.get_object(*VM, "box", namespace)


@pytest.mark.worker
def test_a_vm_from_launch_to_ready_stop_start_and_delete_through_a_worker(
    celery_worker, fleet_env, kube_emulator, tenant, tenant_member, gpu_pool, workload_quota
):
    workload_quota()
    celery_worker(**fleet_env)
    ns = tenant.namespace
    vm = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vm", name="box",
                                  spec={**VM_SPEC, "ssh_public_key": ssh_public_key()})
    wait_until(lambda: _vm(kube_emulator, ns) is not None, timeout=30)
    run_vm(kube_emulator, name="box", namespace=ns)  # KubeVirt boots it
    _observed(lambda: _status(vm) == WorkloadStatus.READY)
    assert "ssh ubuntu@10.244.3.17" in str(Workload.objects.get(pk=vm.pk).connection)

    services.workload_power(workload_id=vm.pk, actor=tenant_member, action="stop")
    wait_until(lambda: _vm(kube_emulator, ns)["spec"]["runStrategy"] == "Halted", timeout=30)
    kube_emulator.delete_object(*VMI, "box", ns)  # KubeVirt stops the instance
    run_vm(kube_emulator, name="box", namespace=ns, running=False)
    _observed(lambda: Workload.objects.get(pk=vm.pk).details.get("power") == "stopped")

    services.workload_power(workload_id=vm.pk, actor=tenant_member, action="start")
    wait_until(lambda: _vm(kube_emulator, ns)["spec"]["runStrategy"] == "Always", timeout=30)
    run_vm(kube_emulator, name="box", namespace=ns, ip="10.244.3.18")
    _observed(lambda: "10.244.3.18" in str(Workload.objects.get(pk=vm.pk).connection))

    services.workload_delete(workload_id=vm.pk, actor=tenant_member)
    wait_until(lambda: _vm(kube_emulator, ns) is None, timeout=30)
    # Kubernetes' garbage collector removes the instance its VirtualMachine owned; until
    # then the workload waits for it.
    assert _status(vm) == WorkloadStatus.DELETING
    kube_emulator.delete_object(*VMI, "box", ns)
    _observed(lambda: _status(vm) == WorkloadStatus.DELETED)
    assert _vm(kube_emulator, ns) is None  # the teardown is confirmed: nothing left
    kinds = [e.kind for e in WorkloadEvent.objects.filter(workload=vm).order_by("pk")]
    assert kinds.count(WorkloadEvent.Kind.POWER) == 2


@pytest.mark.worker
def test_a_slurm_cluster_from_launch_to_ready_scale_and_delete_through_a_worker(
    celery_worker, fleet_env, kube_emulator, tenant, tenant_member, gpu_pool, workload_quota
):
    workload_quota()
    celery_worker(**fleet_env)
    ns = tenant.namespace
    slurm = services.workload_launch(tenant=tenant, actor=tenant_member, kind="slurm",
                                     name="hpc", spec=SLURM_SPEC)
    wait_until(lambda: kube_emulator.get_object(SLINKY, "NodeSet", "hpc-workers", ns)
               is not None, timeout=30)
    labels = {"portal.ai-factory.io/workload-id": str(slurm.pk),
              "app.kubernetes.io/managed-by": "ai-factory-portal"}
    run_slurm(kube_emulator, ctx_name="hpc", namespace=ns, workers=2, labels=labels)
    _observed(lambda: _status(slurm) == WorkloadStatus.READY)

    services.workload_scale(workload_id=slurm.pk, actor=tenant_member, changes={"workers": 3})
    wait_until(lambda: kube_emulator.get_object(SLINKY, "NodeSet", "hpc-workers", ns)
               ["spec"]["replicas"] == 3, timeout=30)
    run_slurm(kube_emulator, ctx_name="hpc", namespace=ns, workers=3, labels=labels)
    _observed(lambda: Workload.objects.get(pk=slurm.pk).in_sync
              and _status(slurm) == WorkloadStatus.READY)

    services.workload_delete(workload_id=slurm.pk, actor=tenant_member)
    _observed(lambda: _status(slurm) == WorkloadStatus.DELETED)
    for kind, name in (("Controller", "hpc"), ("NodeSet", "hpc-workers"),
                       ("LoginSet", "hpc-login")):
        assert kube_emulator.get_object(SLINKY, kind, name, ns) is None
    # The key Secrets go with the cluster.
    assert kube_emulator.get_object("v1", "Secret", "hpc-slurm-key", ns) is None
