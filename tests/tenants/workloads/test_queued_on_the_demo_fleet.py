"""Issue 32: an inference endpoint's replicas and a VM's launcher pod go through the tenant's
Kueue queue on the simulated fleet, driven through the services the pages call (launch,
reconcile, observe): a replica (a VM) waits Queued while the tenant's quota is held at the same
priority, and starts once it frees; a job of a lower priority gives way to it."""

import pytest

from core.fleet import get_gateway
from tenants.enforcement.manifests import KUEUE
from tenants.enforcement.services import tenant_reconcile
from tenants.workloads import services
from tenants.workloads.models import VmImage, Workload, WorkloadStatus

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
         resource: str = "nvidia.com/gpu") -> None:
    """A job a tenant sends straight to its LocalQueue (not one of the portal's workloads)."""
    get_gateway("main").apply(manifests=[queued_pod(tenant.namespace, name, gpus=gpus,
                                              priority=priority, product=PRODUCT,
                                              resource=resource)])


def _workloads(tenant) -> dict[str, dict]:
    """Kueue's Workloads in the tenant's namespace, by their pod's name."""
    found = get_gateway("main").list(api_version=KUEUE, kind="Workload", namespace=tenant.namespace)
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

    endpoint = observed(_endpoint(tenant, tenant_member, "chat"))
    fleet.advance(20)

    assert observed(endpoint).status == S.READY
    sweep = _workloads(tenant)["sweep"]
    preempted = next(c for c in sweep["status"]["conditions"] if c["type"] == "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")
    pod = get_gateway("main").get(api_version="v1", kind="Pod", name="sweep",
                            namespace=tenant.namespace)
    assert not pod["spec"].get("nodeName")


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
