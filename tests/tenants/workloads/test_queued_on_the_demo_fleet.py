"""Issue 32: an inference endpoint's replicas go through the tenant's Kueue queue on the
simulated fleet, driven through the services the pages call (launch, reconcile, observe): a
replica waits Queued while the tenant's quota is held at the same priority, and starts once it
frees; a job of a lower priority gives way to it."""

import pytest

from core.fleet import get_gateway
from tenants.enforcement.manifests import KUEUE
from tenants.enforcement.services import tenant_reconcile
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus

from ..kueue_pods import queued_pod
from .conftest import H100, INFERENCE_SPEC, observed

S = WorkloadStatus
PRODUCT = "NVIDIA-H100-80GB-HBM3"


@pytest.fixture
def fleet(settings, tenant, gpu_pool, workload_quota, fleet_clock):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    workload_quota(**{H100: 4, "cpu": 256, "memory-gib": 2048, "count:inference": 4})
    get_gateway().apply(manifests=[
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": PRODUCT, "nvidia.com/gpu.count": "8",
        }}, "spec": {}}
        for name in ("gpu-a", "gpu-b")
    ])
    tenant_reconcile(tenant_id=tenant.pk)  # its namespace and queues: Kueue manages it
    return fleet_clock


def _job(tenant, name: str, *, gpus: int, priority: str) -> None:
    """A job a tenant sends straight to its LocalQueue (not one of the portal's workloads)."""
    get_gateway().apply(manifests=[queued_pod(tenant.namespace, name, gpus=gpus,
                                              priority=priority, product=PRODUCT)])


def _workloads(tenant) -> dict[str, dict]:
    """Kueue's Workloads in the tenant's namespace, by their pod's name."""
    found = get_gateway().list(api_version=KUEUE, kind="Workload", namespace=tenant.namespace)
    return {w["metadata"]["ownerReferences"][0]["name"]: w for w in found}


def _reserved(workload: dict) -> dict:
    return next(c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")


def _endpoint(tenant, who, name: str) -> Workload:
    workload = services.workload_launch(
        tenant=tenant, actor=who, kind="inference", name=name,
        spec={**INFERENCE_SPEC, "min_replicas": 1, "max_replicas": 1},
    )
    services.workload_reconcile(workload_id=workload.pk)
    return workload



@pytest.mark.django_db
def test_an_endpoint_waits_queued_in_kueues_words_until_the_quota_frees(
    fleet, tenant, tenant_member
):
    _job(tenant, "finetune", gpus=4, priority="portal-serving")
    assert _reserved(_workloads(tenant)["finetune"])["status"] == "True"

    endpoint = observed(_endpoint(tenant, tenant_member, "chat"))

    assert (endpoint.status, endpoint.status_reason) == (S.PROVISIONING, "Queued")
    assert "1 replica waiting in the tenant's queue" in endpoint.status_message
    (replica,) = [w for name, w in _workloads(tenant).items() if name.startswith("chat-")]
    assert _reserved(replica)["message"] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        "in flavor gpu-nvidia-h100-80gb, 1 more needed")
    (pending,) = get_gateway().pending_workloads(
        namespace=tenant.namespace, local_queue="default", limit=10, offset=0)
    assert pending["metadata"]["name"] == replica["metadata"]["name"]
    assert pending["priority"] == 1000

    get_gateway().delete(api_version="v1", kind="Pod", name="finetune",
                         namespace=tenant.namespace)
    assert observed(endpoint).status == S.PROVISIONING  # admitted now, its pod starting
    fleet.advance(20)
    assert observed(endpoint).status == S.READY


@pytest.mark.django_db
def test_a_lower_priority_job_gives_way_to_an_endpoint(fleet, tenant, tenant_member):
    _job(tenant, "sweep", gpus=4, priority="portal-batch")
    assert _reserved(_workloads(tenant)["sweep"])["status"] == "True"

    endpoint = observed(_endpoint(tenant, tenant_member, "chat"))
    fleet.advance(20)

    assert observed(endpoint).status == S.READY
    sweep = _workloads(tenant)["sweep"]
    preempted = next(c for c in sweep["status"]["conditions"] if c["type"] == "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")
    pod = get_gateway().get(api_version="v1", kind="Pod", name="sweep",
                            namespace=tenant.namespace)
    assert not pod["spec"].get("nodeName")
