"""Issue 29, item 9: the simulated fleet honours capacity. Driven through the services the pages
call (launch, reconcile, observe, delete) and seen on the pages: a replica (or a VM) beyond what
the nodes the tenant may use have left stays Pending with the scheduler's words, the workload
shows Degraded with that reason, it starts on its own once room frees up, and never are more
GPUs placed than the nodes have."""


import pytest

from core.fleet import get_gateway
from core.models import SimulatedObject
from inventory.models import Node
from inventory.resource_classes import PASSTHROUGH_RESOURCES
from inventory.services.sync import cluster_sync
from tenants.workloads import services
from tenants.workloads.models import VmImage, Workload, WorkloadStatus
from tests.support.demo_data import demo_loaded

from .conftest import H100, INFERENCE_SPEC, observed
from .openssh_keys import ed25519_public

S = WorkloadStatus
NODES = ("gpu-a", "gpu-b")  # 8 H100s each, as GPU Feature Discovery labels them


@pytest.fixture
def fleet(settings, tenant, gpu_pool, workload_quota, fleet_clock):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    workload_quota(**{H100: 24, "cpu": 256, "memory-gib": 2048, "count:inference": 4})
    VmImage.objects.create(key="ubuntu", label="Ubuntu 24.04 LTS", default_user="ubuntu",
                           container_disk="quay.io/containerdisks/ubuntu:24.04", min_disk_gib=10)
    get_gateway("main").apply(manifests=[
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
        }}, "spec": {}}
        for name in NODES
    ])
    return fleet_clock


def _endpoint(tenant, who, name, *, gpus, replicas):
    workload = services.workload_launch(
        tenant=tenant, actor=who, kind="inference", name=name,
        spec={**INFERENCE_SPEC, "gpus_per_replica": gpus, "min_replicas": replicas,
              "max_replicas": replicas},
    )
    services.workload_reconcile(workload_id=workload.pk)
    return workload



def _gpus_placed() -> dict[str, int]:
    """Per node, the GPUs the pods bound there ask for (as the cluster's pods say)."""
    placed = dict.fromkeys(NODES, 0)
    for pod in SimulatedObject.objects.filter(kind="Pod"):
        node = (pod.body.get("spec") or {}).get("nodeName")
        for container in (pod.body.get("spec") or {}).get("containers") or []:
            limits = (container.get("resources") or {}).get("limits") or {}
            if node:
                placed[node] += int(limits.get("nvidia.com/gpu", 0))
    return placed


@pytest.mark.django_db
def test_a_replica_beyond_capacity_stays_pending_in_the_schedulers_words_until_room_frees(
    fleet, tenant, tenant_member, login
):
    big = _endpoint(tenant, tenant_member, "big", gpus=8, replicas=2)  # all 16 GPUs
    small = _endpoint(tenant, tenant_member, "small", gpus=1, replicas=1)
    fleet.advance(20)
    assert observed(big).status == S.READY
    small = observed(small)
    assert small.status == S.DEGRADED
    assert small.status_reason == "Unschedulable"
    assert small.status_message.startswith(
        "0/2 nodes are available: 2 Insufficient GPUs."
    ), small.status_message
    assert small.details["replicas_waiting_for_a_node"] == 1
    assert _gpus_placed() == {"gpu-a": 8, "gpu-b": 8}  # never more than the nodes have

    page = login(tenant_member).get(f"/t/acme/workloads/{small.pk}/").content.decode()
    assert 'data-status="degraded">' in page and "Unschedulable" in page
    assert "0/2 nodes are available: 2 Insufficient GPUs." in page

    # Room frees up: the scheduler places the waiting replica, and it comes up.
    services.workload_delete(workload_id=big.pk, actor=tenant_member)
    services.workload_reconcile(workload_id=big.pk)
    assert observed(small).status == S.DEGRADED or small.status == S.PROVISIONING
    assert sum(_gpus_placed().values()) == 1
    fleet.advance(20)
    assert observed(small).status == S.READY, (small.status_reason, small.status_message)


@pytest.mark.django_db
def test_scaling_beyond_capacity_leaves_the_extra_replicas_pending(fleet, tenant, tenant_member):
    endpoint = _endpoint(tenant, tenant_member, "chat", gpus=4, replicas=2)
    fleet.advance(20)
    assert observed(endpoint).status == S.READY
    services.workload_scale(workload_id=endpoint.pk, actor=tenant_member,
                            changes={"min_replicas": 5, "max_replicas": 5})
    services.workload_reconcile(workload_id=endpoint.pk)
    endpoint = observed(endpoint)
    assert endpoint.status == S.DEGRADED and endpoint.status_reason == "Unschedulable"
    assert endpoint.details["replicas_waiting_for_a_node"] == 1  # 4 fit: 2 per node
    assert _gpus_placed() == {"gpu-a": 8, "gpu-b": 8}


@pytest.mark.django_db
def test_a_vm_whose_gpus_no_node_has_left_waits_degraded_in_the_schedulers_words(
    fleet, tenant, tenant_member
):
    big = _endpoint(tenant, tenant_member, "big", gpus=8, replicas=2)
    observed(big)  # its predictor's pods are placed: every GPU is taken
    vm = services.workload_launch(
        tenant=tenant, actor=tenant_member, kind="vm", name="box",
        spec={"image": "ubuntu", "cpu": 2, "memory_gib": 8, "disk_gib": 20, "gpu": H100,
              "gpus": 1, "ssh_public_key": ed25519_public("alice@laptop")},
    )
    services.workload_reconcile(workload_id=vm.pk)
    fleet.advance(20)
    observed(vm)
    vm = observed(vm)
    assert (vm.status, vm.status_reason) == (S.DEGRADED, "Unschedulable")
    assert "Insufficient NVIDIA H100 80GB HBM3 GPUs (passthrough)" in vm.status_message
    assert vm.details["printable_status"] == "ErrorUnschedulable"


@pytest.mark.django_db
def test_the_demo_never_runs_more_gpus_than_its_nodes_have():
    demo_loaded()
    for workload in Workload.objects.exclude(status=S.DELETED):  # as the sweep looks at them
        services.workload_observe(workload_id=workload.pk)
    cluster_sync(cluster="main")

    nodes = {n.name: n.body for n in SimulatedObject.objects.filter(kind="Node")}
    placed: dict[str, dict[str, int]] = {}
    passthrough, vm_gpus = set(PASSTHROUGH_RESOURCES.values()), 0
    for row in SimulatedObject.objects.filter(kind="Pod"):  # a VM's launcher pod among them
        spec = row.body.get("spec") or {}
        node = spec.get("nodeName")
        if not node or spec.get("schedulerName") == "hami-scheduler":
            continue
        on_node = placed.setdefault(node, {})
        for container in spec.get("containers") or []:
            limits = (container.get("resources") or {}).get("limits") or {}
            for resource, value in limits.items():
                # A GPU passed through to a VM is one of the node's GPUs.
                vm_gpus += int(value) if resource in passthrough else 0
                key = "nvidia.com/gpu" if resource in passthrough else resource
                if key == "nvidia.com/gpu" or key.startswith("nvidia.com/mig-"):
                    on_node[key] = on_node.get(key, 0) + int(value)
    assert placed and vm_gpus  # the demo runs GPU work, a VM's among it
    for name, asked in placed.items():
        labels = (nodes[name].get("metadata") or {}).get("labels") or {}
        if "nvidia.com/gpu.count" not in labels:
            continue  # HAMi's node: shares, counted by HAMi
        assert asked.get("nvidia.com/gpu", 0) <= int(labels["nvidia.com/gpu.count"]), name
        for resource, units in asked.items():
            if resource.startswith("nvidia.com/mig-"):
                assert units <= int(labels[f"{resource}.count"]), (name, resource)
    for node in Node.objects.prefetch_related("gpus"):
        assert node.gpus_in_use <= len(node.gpus.all()), node.hostname


@pytest.mark.django_db
def test_a_failed_gpu_on_a_node_still_in_service_is_not_offered(fleet, tenant, tenant_member):
    """The device plugin leaves an unhealthy GPU out of the node's allocatable: a replica that
    needs all eight of a node whose eighth failed waits, in the scheduler's words."""
    for name in NODES:
        get_gateway("main").apply(manifests=[
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
            }}, "spec": {}, "status": {"allocatable": {"nvidia.com/gpu": "7"}}}
        ])
    full = _endpoint(tenant, tenant_member, "full", gpus=8, replicas=1)
    fleet.advance(20)

    full = observed(full)

    assert (full.status, full.status_reason) == (S.DEGRADED, "Unschedulable")
    assert "2 Insufficient GPUs" in full.status_message
    assert sum(_gpus_placed().values()) == 0
    fits = _endpoint(tenant, tenant_member, "fits", gpus=7, replicas=1)
    fleet.advance(20)
    assert observed(fits).status == S.READY
