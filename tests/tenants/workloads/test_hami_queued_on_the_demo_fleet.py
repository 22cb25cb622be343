"""Issue 32: an inference endpoint on HAMi shares goes through its tenant's `shares` queue on the
simulated fleet, driven through the services the pages call (launch, scale, reconcile, observe):
its replicas are admitted into the model's HAMi flavor within the tenant's HAMi quota (memory and
compute, in Kueue's units) and placed by HAMi's scheduler; what goes beyond the quota waits in
the queue in Kueue's words until the quota frees."""

import pytest

from core.fleet import get_gateway
from tenants.enforcement.manifests import KUEUE
from tenants.enforcement.services import tenant_reconcile
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus
from tests.factories import hami_gpu_node

from ..kueue_pods import hami_pod
from .conftest import observed

S = WorkloadStatus
PRODUCT = "NVIDIA-L40S"
MEMORY, CORES = "hami:nvidia-l40s:memory-gib", "hami:nvidia-l40s:cores"
SHARE = {"model_uri": "hf://Qwen/Qwen2.5-7B-Instruct", "gpu": "hami:nvidia-l40s",
         "gpu_memory_gib": 20, "gpu_cores": 30, "min_replicas": 2, "max_replicas": 2, "cpu": 4,
         "memory_gib": 32}
WAITING = ("couldn't assign flavors to pod set main: insufficient unused quota for "
           "nvidia.com/gpumem in flavor hami-nvidia-l40s, 12288 more needed")


@pytest.fixture
def fleet(settings, tenant, workload_quota, fleet_clock):
    """48 GiB and 100 % of L40S shares (2 replicas of 20 GiB fit, 3 do not); one node HAMi
    shares, labelled as GPU Feature Discovery and HAMi label it."""
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    hami_gpu_node(gpus=2)  # the inventory's: what the launch form offers
    workload_quota(**{MEMORY: 48, CORES: 100, "count:inference": 2})
    get_gateway("main").apply(manifests=[
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "l40s-hami", "labels": {
            "kubernetes.io/hostname": "l40s-hami", "gpu": "on",
            "nvidia.com/gpu.product": PRODUCT}}, "spec": {}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "l40s-whole", "labels": {
            "kubernetes.io/hostname": "l40s-whole", "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": PRODUCT, "nvidia.com/gpu.count": "8"}}, "spec": {}},
    ])
    tenant_reconcile(tenant_id=tenant.pk)  # its namespace and queues, the shares queue too
    return fleet_clock


def _job(tenant, name: str, *, memory_gib: int) -> None:
    """A pod a tenant sends straight to its shares queue (not one of the portal's workloads)."""
    get_gateway("main").apply(manifests=[hami_pod(tenant.namespace, name, memory_gib=memory_gib,
                                            cores=10, priority="portal-serving",
                                            product=PRODUCT)])


def _workloads(tenant) -> dict[str, dict]:
    """Kueue's Workloads in the tenant's namespace, by their pod's name."""
    found = get_gateway("main").list(api_version=KUEUE, kind="Workload", namespace=tenant.namespace)
    return {w["metadata"]["ownerReferences"][0]["name"]: w for w in found}


def _reserved(workload: dict) -> dict:
    return next(c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")


def _replicas(tenant) -> dict[str, dict]:
    return {name: w for name, w in _workloads(tenant).items() if name.startswith("chat-")}


def _endpoint(tenant, who) -> Workload:
    workload = services.workload_launch(tenant=tenant, actor=who, kind="inference", name="chat",
                                        spec=SHARE)
    services.workload_reconcile(workload_id=workload.pk)
    return workload


def _pod(tenant, name: str) -> dict:
    return get_gateway("main").get(api_version="v1", kind="Pod", name=name,
                                   namespace=tenant.namespace)


def _shares_usage(tenant) -> dict[str, str]:
    queue = get_gateway("main").get(api_version=KUEUE, kind="ClusterQueue",
                              name=f"tenant-{tenant.slug}-shares")
    (flavor,) = [f for f in queue["status"]["flavorsUsage"] if f["name"] == "hami-nvidia-l40s"]
    return {cell["name"]: cell["total"] for cell in flavor["resources"]}


@pytest.mark.django_db
def test_a_hami_endpoint_is_admitted_into_its_models_hami_flavor_within_the_quota(
    fleet, tenant, tenant_member
):
    endpoint = observed(_endpoint(tenant, tenant_member))
    fleet.advance(20)
    assert observed(endpoint).status == S.READY

    replicas = _replicas(tenant)
    assert len(replicas) == 2
    for name, workload in replicas.items():
        assert workload["spec"]["queueName"] == "shares"
        assert workload["spec"]["priorityClassRef"]["name"] == "portal-serving"
        (assigned,) = workload["status"]["admission"]["podSetAssignments"]
        assert workload["status"]["admission"]["clusterQueue"] == "tenant-acme-shares"
        assert assigned["flavors"] == {
            "cpu": "portal-default", "memory": "portal-default",
            "nvidia.com/gpu": "hami-nvidia-l40s", "nvidia.com/gpumem": "hami-nvidia-l40s",
            "nvidia.com/gpucores": "hami-nvidia-l40s"}
        # HAMi's scheduler placed it, on the node HAMi shares (not the whole-GPU one).
        assert _pod(tenant, name)["spec"]["nodeName"] == "l40s-hami"
    # Kueue meters what HAMi reserves: one vGPU, its memory in MiB and compute each.
    assert _shares_usage(tenant) == {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "40960",
                                     "nvidia.com/gpucores": "60"}
    # The whole-GPU queue holds none of it.
    main = get_gateway("main").get(api_version=KUEUE, kind="ClusterQueue", name="tenant-acme")
    assert main["status"]["admittedWorkloads"] == 0


@pytest.mark.django_db
def test_a_replica_beyond_the_hami_quota_waits_in_the_shares_queue_until_a_scale_down(
    fleet, tenant, tenant_member
):
    _job(tenant, "notebook-share", memory_gib=20)
    assert _reserved(_workloads(tenant)["notebook-share"])["status"] == "True"

    endpoint = observed(_endpoint(tenant, tenant_member))

    assert (endpoint.status, endpoint.status_reason) == (S.PROVISIONING, "Queued")
    assert "1 replica waiting in the tenant's queue" in endpoint.status_message
    waiting = [w for w in _replicas(tenant).values() if _reserved(w)["status"] == "False"]
    (replica,) = waiting
    assert _reserved(replica)["message"] == WAITING
    # The visibility API of the shares LocalQueue, and the workload's page, say where it stands.
    (pending,) = get_gateway("main").pending_workloads(
        namespace=tenant.namespace, local_queue="shares", limit=10, offset=0)
    assert pending["metadata"]["name"] == replica["metadata"]["name"]
    assert get_gateway("main").pending_workloads(
        namespace=tenant.namespace, local_queue="default", limit=10, offset=0) == []
    queue = endpoint.observed["details"]["queue"]
    assert (queue["position_in_local_queue"], queue["kueue_message"]) == (1, WAITING)
    # A share is no GPU: the tenant's queued GPUs count none of it; nothing is borrowed.
    assert (queue["flavor"], queue["gpus"], queue["would_borrow"]) == ("hami-nvidia-l40s", 0, 0)
    assert queue["summary"] == (
        "1st in the queue · waits for 1 NVIDIA L40S HAMi share (flavor hami-nvidia-l40s)")

    # Scaled down to one replica: the one waiting goes, the endpoint serves.
    services.workload_scale(workload_id=endpoint.pk, actor=tenant_member,
                            changes={"min_replicas": 1, "max_replicas": 1})
    services.workload_reconcile(workload_id=endpoint.pk)
    fleet.advance(20)
    assert observed(endpoint).status == S.READY
    assert len(_replicas(tenant)) == 1

    # The job scaled down too (gone): the endpoint grows back to two, both admitted.
    get_gateway("main").delete(api_version="v1", kind="Pod", name="notebook-share",
                         namespace=tenant.namespace)
    services.workload_scale(workload_id=endpoint.pk, actor=tenant_member,
                            changes={"min_replicas": 2, "max_replicas": 2})
    services.workload_reconcile(workload_id=endpoint.pk)
    replicas = _replicas(tenant)
    assert len(replicas) == 2
    assert {_reserved(w)["status"] for w in replicas.values()} == {"True"}
    fleet.advance(20)
    assert observed(endpoint).status == S.READY
