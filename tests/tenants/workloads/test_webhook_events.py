"""A workload's events reach webhooks once each, from their real triggers: ready and failed
(observed on the cluster, through the emulator), preempted (Kueue's eviction, seen again and
again), warned as idle (the idle sweep over Prometheus)."""

import pytest

from tenants.workloads import services
from tenants.workloads.services import idle
from tests.support.webhooks import hook_for, owed

from .conftest import INFERENCE_SPEC, ready_inference_service
from .test_idle_policy import NOW, fleet, prometheus  # noqa: F401 - fixtures
from .test_queue_visibility import KUEUE, _preempted, queued  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db
ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
NOT_FOUND = "Repository Not Found for url: https://huggingface.co/meta-llama/nope"
FAILING = {
    "conditions": [
        {"type": "PredictorReady", "status": "False", "reason": "ModelLoadFailed",
         "message": NOT_FOUND},
        {"type": "Ready", "status": "False", "reason": "ModelLoadFailed", "message": NOT_FOUND},
    ],
    "modelStatus": {"states": {"activeModelState": "", "targetModelState": "FailedToLoad"},
                    "transitionStatus": "BlockedByFailedLoad",
                    "lastFailureInfo": {"reason": "ModelLoadFailed",
                                        "message": "Repository Not Found"}},
}


@pytest.fixture
def hook(tenant):
    return hook_for(tenant, url="https://hooks.example.com/acme")


def test_ready_then_failed_are_each_told_once(
    hook, tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator,
):
    workload_quota()
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="chat", spec=INFERENCE_SPEC)
    services.workload_reconcile(workload_id=workload.pk)
    ready_inference_service(kube_emulator, name="chat", namespace=tenant.namespace)
    for _ in range(2):  # seen ready twice: told once
        services.workload_observe(workload_id=workload.pk)
    [ready] = owed("workload.ready")
    assert ready["data"]["workload"] == {"id": workload.pk, "name": "chat",
                                         "kind": "Inference endpoint", "status": "ready"}
    assert ready["data"]["url"].endswith(f"/t/acme/workloads/{workload.pk}/")

    broken = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                      name="broken", spec=INFERENCE_SPEC)
    services.workload_reconcile(workload_id=broken.pk)
    kube_emulator.patch_object(*ISVC, "broken", tenant.namespace, patch={"status": FAILING})
    assert services.workload_observe(workload_id=broken.pk) == "failed"
    services.workload_observe(workload_id=broken.pk)
    [failed] = owed("workload.failed")
    assert failed["data"]["reason"] == "ModelLoadFailed"
    assert "Repository Not Found" in failed["data"]["message"]


def test_a_preemption_is_told_once_however_often_it_is_seen(
    hook, queued, tenant, kube_emulator,  # noqa: F811
):
    kube_emulator.patch_object(KUEUE, "Workload", "pod-chat-predictor-0", tenant.namespace,
                               patch={"status": {"conditions": _preempted(
                                   "0b7c9d1e-1111-2222-3333-444455556666", "UNKNOWN",
                                   reason="InClusterQueue",
                                   why="prioritization in the ClusterQueue")}})
    for _ in range(2):
        services.workload_observe(workload_id=queued.pk)
    [preempted] = owed("workload.preempted")
    assert preempted["data"]["workload"]["name"] == "chat"
    assert preempted["data"]["message"].startswith("Kueue preempted it: ")


def test_an_idle_warning_is_told_once_per_warned_workload(fleet, tenant):  # noqa: F811
    hook_for(tenant, url="https://hooks.example.com/acme", events=["workload.idle_warned"])
    idle.workloads_idle_sweep(now=NOW)
    idle.workloads_idle_sweep(now=NOW)  # warned already: not again
    warned = {p["data"]["workload"]["name"]: p["data"] for p in owed("workload.idle_warned")}
    assert set(warned) == {"chat", "desk", "hpc"}  # globex's policy is off, "kept" is kept
    assert warned["chat"]["idle_gpus"] == 3 and warned["chat"]["utilization"] == "1.00"
