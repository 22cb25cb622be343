"""Issue 32: an inference endpoint's replicas and a VM's launcher pod go through the tenant's
Kueue queue on the simulated fleet, driven through the services the pages call (launch,
reconcile, observe): a replica (a VM) waits Queued while the tenant's quota is held at the same
priority, and starts once it frees; a job of a lower priority gives way to it. An endpoint with
a minimum has a queue of its own, whose nominal quota its minimum replicas hold: it takes that
back from the tenant's other work, and no lender reclaims it."""

import pytest

from core.fleet import get_gateway
from tenants.enforcement.manifests import KUEUE
from tenants.enforcement.services import tenant_reconcile
from tenants.models import Quota, Tenant
from tenants.workloads import services
from tenants.workloads.kinds.base import queued_by_kueue
from tenants.workloads.models import VmImage, Workload, WorkloadStatus
from tests.factories import QuotaFactory

from ..kueue_pods import queued_pod
from .conftest import H100, INFERENCE_SPEC, observed
from .openssh_keys import ed25519_public

S = WorkloadStatus
PRODUCT = "NVIDIA-H100-80GB-HBM3"
PASSTHROUGH = "nvidia.com/GH100_H100_SXM5_80GB"  # an H100 as a VM's launcher pod asks for it


@pytest.fixture
def fleet(settings, tenant, gpu_pool, workload_quota, fleet_clock):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    workload_quota(**{H100: 4, "cpu": 256, "memory-gib": 2048, "count:inference": 4})
    get_gateway("main").apply(manifests=[
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": PRODUCT, "nvidia.com/gpu.count": "8",
        }}, "spec": {}}
        for name in ("gpu-a", "gpu-b")
    ])
    VmImage.objects.create(key="ubuntu", label="Ubuntu 24.04 LTS", default_user="ubuntu",
                           container_disk="quay.io/containerdisks/ubuntu:24.04", min_disk_gib=10)
    tenant_reconcile(tenant_id=tenant.pk)  # its namespace and queues: Kueue manages it
    return fleet_clock


def _job(tenant, name: str, *, gpus: int, priority: str,
         resource: str = "nvidia.com/gpu", queue: str = "default") -> None:
    """A job a tenant sends straight to its LocalQueue (not one of the portal's workloads)."""
    get_gateway("main").apply(manifests=[queued_pod(tenant.namespace, name, gpus=gpus,
                                              priority=priority, product=PRODUCT,
                                              resource=resource, queue=queue)])


def _workloads(tenant) -> dict[str, dict]:
    """Kueue's Workloads in the tenant's namespace, by their pod's name."""
    found = get_gateway("main").list(api_version=KUEUE, kind="Workload", namespace=tenant.namespace)
    return {w["metadata"]["ownerReferences"][0]["name"]: w for w in found}


def _reserved(workload: dict) -> dict:
    return next(c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")


def _endpoint(tenant, who, name: str, *, min_replicas: int = 1, max_replicas: int = 1,
              spec: dict | None = None) -> Workload:
    workload = services.workload_launch(
        tenant=tenant, actor=who, kind="inference", name=name,
        spec={**INFERENCE_SPEC, **(spec or {}), "min_replicas": min_replicas,
              "max_replicas": max_replicas},
    )
    services.workload_reconcile(workload_id=workload.pk)
    return workload



@pytest.mark.django_db
def test_an_endpoint_waits_queued_in_kueues_words_until_the_quota_frees(
    fleet, tenant, tenant_member
):
    _job(tenant, "finetune", gpus=4, priority="portal-serving")
    assert _reserved(_workloads(tenant)["finetune"])["status"] == "True"

    # Minimum 0: no queue of its own, nothing reserved; its one replica waits in `default`.
    endpoint = observed(_endpoint(tenant, tenant_member, "chat", min_replicas=0))

    assert (endpoint.status, endpoint.status_reason) == (S.PROVISIONING, "Queued")
    assert "1 replica waiting in the tenant's queue" in endpoint.status_message
    (replica,) = [w for name, w in _workloads(tenant).items() if name.startswith("chat-")]
    assert _reserved(replica)["message"] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        "in flavor gpu-nvidia-h100-80gb, 1 more needed")
    (pending,) = get_gateway("main").pending_workloads(
        namespace=tenant.namespace, local_queue="default", limit=10, offset=0)
    assert pending["metadata"]["name"] == replica["metadata"]["name"]
    assert pending["priority"] == 1000

    get_gateway("main").delete(api_version="v1", kind="Pod", name="finetune",
                         namespace=tenant.namespace)
    assert observed(endpoint).status == S.PROVISIONING  # admitted now, its pod starting
    fleet.advance(20)
    assert observed(endpoint).status == S.READY


@pytest.mark.django_db
def test_a_lower_priority_job_gives_way_to_an_endpoint(fleet, tenant, tenant_member):
    _job(tenant, "sweep", gpus=4, priority="portal-batch")
    assert _reserved(_workloads(tenant)["sweep"])["status"] == "True"

    endpoint = observed(_endpoint(tenant, tenant_member, "chat", min_replicas=0))
    fleet.advance(20)

    assert observed(endpoint).status == S.READY
    sweep = _workloads(tenant)["sweep"]
    preempted = next(c for c in sweep["status"]["conditions"] if c["type"] == "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")
    pod = get_gateway("main").get(api_version="v1", kind="Pod", name="sweep",
                            namespace=tenant.namespace)
    assert not pod["spec"].get("nodeName")


@pytest.mark.django_db
def test_an_endpoints_minimum_takes_its_quota_back_from_the_tenants_own_work(
    fleet, tenant, tenant_member
):
    _job(tenant, "finetune", gpus=4, priority="portal-serving")  # the tenant's whole quota

    endpoint = observed(_endpoint(tenant, tenant_member, "chat"))
    fleet.advance(20)

    assert observed(endpoint).status == S.READY
    (replica,) = [w for name, w in _workloads(tenant).items() if name.startswith("chat-")]
    assert replica["spec"]["queueName"] == "ep-chat"
    assert replica["status"]["admission"]["clusterQueue"] == "tenant-acme-ep-chat"
    preempted = next(c for c in _workloads(tenant)["finetune"]["status"]["conditions"]
                     if c["type"] == "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InCohortReclamation")
    assert queued_by_kueue(get_gateway("main").get(api_version="v1", kind="Pod", name="finetune",
                                             namespace=tenant.namespace))


def _vm(tenant, who, name: str) -> Workload:
    """A VM with one H100 passed through; its disk imported once the fleet's clock moved on."""
    workload = services.workload_launch(
        tenant=tenant, actor=who, kind="vm", name=name,
        spec={"image": "ubuntu", "cpu": 2, "memory_gib": 8, "disk_gib": 20, "gpu": H100,
              "gpus": 1, "ssh_public_key": ed25519_public("alice@laptop")},
    )
    services.workload_reconcile(workload_id=workload.pk)
    return workload


def _launcher(tenant) -> dict:
    (pod,) = [p for p in get_gateway("main").list(api_version="v1", kind="Pod",
                                            namespace=tenant.namespace)
              if p["metadata"]["name"].startswith("virt-launcher-")]
    return pod


@pytest.mark.django_db
def test_a_vm_waits_queued_for_the_passthrough_quota_and_boots_once_it_frees(
    fleet, tenant, tenant_member
):
    _job(tenant, "desktops", gpus=4, priority="portal-serving", resource=PASSTHROUGH)
    assert _reserved(_workloads(tenant)["desktops"])["status"] == "True"
    vm = _vm(tenant, tenant_member, "box")
    fleet.advance(10)  # its disk is imported: KubeVirt makes its VMI and launcher pod

    vm = observed(vm)

    assert (vm.status, vm.status_reason, vm.status_label) == (S.PROVISIONING, "Queued", "Queued")
    assert "Waiting in the tenant's queue" in vm.status_message
    launcher = _launcher(tenant)
    assert launcher["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}]
    (workload,) = [w for name, w in _workloads(tenant).items() if name.startswith("virt-")]
    assert workload["spec"]["priorityClassRef"]["name"] == "portal-interactive"
    message = ("couldn't assign flavors to pod set main: insufficient unused quota for "
               f"{PASSTHROUGH} in flavor gpu-passthrough, 1 more needed")
    assert _reserved(workload)["message"] == message
    assert vm.details["queue"]["kueue_message"] == message
    assert vm.details["queue"]["summary"] == (
        "1st in the queue · waits for 1 NVIDIA H100 80GB HBM3 GPU (flavor gpu-passthrough)")
    instance = get_gateway("main").get(api_version="kubevirt.io/v1", kind="VirtualMachineInstance",
                                 name="box", namespace=tenant.namespace)
    assert instance["status"]["phase"] == "Scheduling"

    get_gateway("main").delete(api_version="v1", kind="Pod", name="desktops",
                         namespace=tenant.namespace)
    vm = observed(vm)
    assert _reserved(_workloads(tenant)[launcher["metadata"]["name"]])["status"] == "True"
    assert _launcher(tenant)["spec"]["nodeName"].startswith("gpu-")
    assert vm.status_reason != "Queued"
    fleet.advance(10)  # it boots from when Kueue admitted it

    vm = observed(vm)
    assert vm.status == S.READY
    # Kueue gated the launcher pod, not the VMI: the VMI is the VM's template as it was, so
    # KubeVirt asks for no restart.
    assert (vm.details["restart_required"], vm.status_message) == (False, "")


@pytest.mark.django_db
def test_a_vms_gpus_are_metered_apart_from_the_containers_gpus_of_the_model(
    fleet, tenant, tenant_member
):
    """Kueue counts a model's passthrough GPUs apart: the portal's admission holds the sum."""
    _job(tenant, "finetune", gpus=4, priority="portal-serving")
    assert _reserved(_workloads(tenant)["finetune"])["status"] == "True"
    vm = _vm(tenant, tenant_member, "box")
    fleet.advance(20)

    assert observed(vm).status == S.READY


@pytest.mark.django_db
def test_a_lower_priority_job_on_passthrough_gpus_gives_way_to_a_vm(
    fleet, tenant, tenant_member
):
    _job(tenant, "sweep", gpus=4, priority="portal-batch", resource=PASSTHROUGH)
    assert _reserved(_workloads(tenant)["sweep"])["status"] == "True"
    vm = _vm(tenant, tenant_member, "box")
    fleet.advance(20)

    assert observed(vm).status == S.READY
    preempted = next(c for c in _workloads(tenant)["sweep"]["status"]["conditions"]
                     if c["type"] == "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")


def _running(tenant, prefix: str) -> set[str]:
    """The tenant's pods named `prefix…` that Kueue admitted and the scheduler bound."""
    _workloads(tenant)  # reading Kueue plays its round first
    pods = get_gateway("main").list(api_version="v1", kind="Pod", namespace=tenant.namespace)
    return {p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith(prefix)
            and p["spec"].get("nodeName") and not p["spec"].get("schedulingGates")}


@pytest.mark.django_db
def test_a_lender_reclaiming_its_quota_never_takes_an_endpoint_below_its_minimum(
    fleet, tenant, other_tenant, tenant_member
):
    QuotaFactory(tenant=other_tenant, resource=H100, limit=4)
    QuotaFactory(tenant=other_tenant, resource="cpu", limit=64)
    QuotaFactory(tenant=other_tenant, resource="memory-gib", limit=256)
    Tenant.objects.filter(pk__in=[tenant.pk, other_tenant.pk]).update(cohort="pool")
    for each in (tenant, other_tenant):
        tenant_reconcile(tenant_id=each.pk)
    _job(tenant, "finetune", gpus=2, priority="portal-serving")

    chat = _endpoint(tenant, tenant_member, "chat", min_replicas=2, max_replicas=4)
    fleet.advance(20)
    assert observed(chat).status == S.READY
    # The autoscaler's two replicas above the minimum: beyond Acme's 4 GPUs, lent by Globex.
    for n in range(2):
        _job(tenant, f"chat-extra-{n}", gpus=1, priority="portal-serving", queue="ep-chat")
    assert _running(tenant, "chat-extra-") == {"chat-extra-0", "chat-extra-1"}
    assert len(_running(tenant, "chat-predictor-")) == 2
    tenant_reconcile(tenant_id=tenant.pk)
    quota = Quota.objects.get(tenant=tenant, resource=H100)
    assert (quota.in_use, quota.borrowed) == (6, 2)  # summed over its queues

    _job(other_tenant, "reclaim", gpus=4, priority="portal-batch")  # its whole quota back

    assert _running(other_tenant, "reclaim") == {"reclaim"}
    assert _running(tenant, "chat-extra-") == set()  # the borrowed replicas gave way
    assert len(_running(tenant, "chat-predictor-")) == 2  # the minimum stays
    assert _running(tenant, "finetune") == {"finetune"}  # within Acme's own quota
    preempted = next(c for c in _workloads(tenant)["chat-extra-0"]["status"]["conditions"]
                     if c["type"] == "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InCohortReclamation")
    assert observed(chat).status == S.READY
