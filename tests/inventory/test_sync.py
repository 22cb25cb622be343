"""Cluster sync against the Kubernetes API emulator over HTTP, with real GFD label sets."""

import pytest

from core.fleet import TransientFleetError
from core.models import AuditEvent
from inventory.models import GPU, HealthEvent, InventoryRun, Node, NodeState
from inventory.services.sync import cluster_sync
from inventory.tasks import cluster_sync_task
from tests.factories import GPUFactory, NodeFactory

from .cluster_objects import (
    HAMI_NODE,
    RTX_LABELS,
    RTX_NODE,
    hami_node,
    hami_pod,
    mig_mixed_labels,
    mig_single_labels,
    node,
    plain_labels,
    pod,
)


@pytest.fixture
def cluster(kube_emulator):
    """Five GPU nodes of four kinds, and pods placed on them."""
    kube_emulator.put_object(node(RTX_NODE, RTX_LABELS, gpus=1, cpu="8", memory="32779776Ki"))
    kube_emulator.put_object(node("a100-1", mig_mixed_labels("a100-1"), gpus=6,
                                  mig={"1g.10gb": 14}))
    kube_emulator.put_object(node("h100-1", mig_single_labels("h100-1"), gpus=56))
    kube_emulator.put_object(
        node("l40s-1", plain_labels("l40s-1", product="NVIDIA-L40S", count=8, memory_mib=46068),
             gpus=8, ready=False, unschedulable=True)
    )
    kube_emulator.put_object(
        node("t4-1", plain_labels("t4-1", product="Tesla-T4", count=1, memory_mib=15360), gpus=1)
    )
    kube_emulator.put_object(pod("llm-0", "tenant-acme", RTX_NODE, gpus=1))
    kube_emulator.put_object(pod("eval-0", "tenant-acme", "a100-1", mig={"1g.10gb": 3}))
    kube_emulator.put_object(pod("dcgm-exporter-a", "gpu-operator", "a100-1", daemon_set=True))
    return kube_emulator


@pytest.mark.django_db
def test_sync_creates_and_updates_the_inventory_and_reports_one_sided_nodes(
    cluster, kube_gateway, tenant
):
    NodeFactory(hostname="a100-1", k8s_name="a100-1", state=NodeState.AVAILABLE, cpu_cores=0)
    NodeFactory(hostname="l40s-1", k8s_name="l40s-1", state=NodeState.AVAILABLE)
    NodeFactory(hostname="gone-1", k8s_name="gone-1", state=NodeState.AVAILABLE)
    NodeFactory(hostname="old-1", k8s_name="old-1", state=NodeState.RETIRED)

    run = cluster_sync(cluster="main")

    assert run.ok
    assert sorted(run.summary["created"]) == sorted([RTX_NODE, "h100-1", "t4-1"])
    assert run.summary["only_in_inventory"] == ["gone-1"]
    assert run.summary["unknown_products"] == {"t4-1": "Tesla-T4"}
    assert run.summary["adopted_cordons"] == ["l40s-1"]

    rtx = Node.objects.get(k8s_name=RTX_NODE)
    assert (rtx.state, rtx.rack, rtx.role) == (NodeState.DISCOVERED, None, "gpu-worker")
    assert (rtx.cpu_cores, rtx.memory_gib, rtx.gpus_in_use) == (8, 31, 1)
    assert rtx.placed_pods == [
        {"namespace": "tenant-acme", "name": "llm-0", "gpus": 1, "mig": {}}
    ]
    assert list(rtx.gpus.values_list("model", "memory_gib")) == [("nvidia-rtx-4000-ada", 20)]

    a100 = Node.objects.get(k8s_name="a100-1")
    layouts = list(a100.gpus.order_by("index").values_list("mig_layout", flat=True))
    assert layouts == [["1g.10gb"] * 7] * 2 + [[]] * 6
    assert a100.cpu_cores == 128 and a100.memory_gib == 1008
    assert a100.mig_in_use == {"1g.10gb": 3}
    assert a100.gpus.filter(nvlink_domain="7b968a6d-c8aa-45e1-9e07-e1e51be99c31.1").count() == 8

    h100 = Node.objects.get(k8s_name="h100-1")
    assert h100.gpus.count() == 8
    assert list(h100.gpus.values_list("mig_layout", flat=True)) == [["1g.10gb"] * 7] * 8
    assert Node.objects.get(k8s_name="t4-1").gpus.count() == 0

    l40s = Node.objects.get(k8s_name="l40s-1")
    assert l40s.state == NodeState.CORDONED  # cordoned in the cluster: adopted, audited
    assert l40s.k8s_ready is False
    event = HealthEvent.objects.get(node=l40s)
    assert (event.kind, event.source, event.resolved_at) == ("node-not-ready", "kubernetes", None)
    adopted = AuditEvent.objects.get(action="node.transition", object_id=str(l40s.pk))
    assert adopted.actor_repr == "system" and "observed by the sync" in adopted.changes["reason"]

    requests = [(r.method, r.path) for r in cluster.requests()]
    assert ("GET", "/api/v1/nodes") in requests and ("GET", "/api/v1/pods") in requests
    assert not [r for r in requests if r[0] != "GET"]  # reading the cluster changes nothing


@pytest.mark.django_db
def test_a_second_sync_changes_nothing(cluster, kube_gateway):
    cluster_sync(cluster="main")
    before = (
        Node.objects.count(), GPU.objects.count(), HealthEvent.objects.count(),
        AuditEvent.objects.count(),
        sorted(Node.objects.values_list("k8s_name", "state", "cpu_cores", "gpus_in_use")),
        sorted(GPU.objects.values_list("node__k8s_name", "index", "model", "mig_layout")),
    )

    second = cluster_sync(cluster="main")

    after = (
        Node.objects.count(), GPU.objects.count(), HealthEvent.objects.count(),
        AuditEvent.objects.count(),
        sorted(Node.objects.values_list("k8s_name", "state", "cpu_cores", "gpus_in_use")),
        sorted(GPU.objects.values_list("node__k8s_name", "index", "model", "mig_layout")),
    )
    assert after == before
    assert second.summary["created"] == [] and second.summary["updated"] == []


@pytest.mark.django_db
def test_a_node_the_portal_cordoned_but_the_cluster_schedules_is_cordoned_again(
    kube_emulator, kube_gateway, django_capture_on_commit_callbacks
):
    kube_emulator.put_object(node(RTX_NODE, RTX_LABELS, gpus=1))
    inventory_node = NodeFactory(hostname=RTX_NODE, k8s_name=RTX_NODE,
                                 state=NodeState.MAINTENANCE)
    GPUFactory(node=inventory_node, index=0, model="nvidia-rtx-4000-ada", memory_gib=20)

    with django_capture_on_commit_callbacks(execute=True):
        run = cluster_sync(cluster="main")

    assert run.summary["recordoned"] == [RTX_NODE]
    patches = kube_emulator.requests("PATCH", f"/api/v1/nodes/{RTX_NODE}")
    assert [p.data for p in patches] == [{"spec": {"unschedulable": True}}]
    assert kube_emulator.get_object("v1", "Node", RTX_NODE)["spec"]["unschedulable"] is True
    assert Node.objects.get(pk=inventory_node.pk).state == NodeState.MAINTENANCE


@pytest.mark.django_db
def test_a_node_ready_again_closes_its_not_ready_event(kube_emulator, kube_gateway):
    kube_emulator.put_object(node(RTX_NODE, RTX_LABELS, gpus=1, ready=False))
    cluster_sync(cluster="main")
    kube_emulator.put_object(node(RTX_NODE, RTX_LABELS, gpus=1, ready=True))

    cluster_sync(cluster="main")

    event = HealthEvent.objects.get(kind="node-not-ready")
    assert event.resolved_at is not None


@pytest.mark.django_db
def test_an_unreachable_api_server_is_recorded_and_retried(
    kube_emulator, kube_gateway, eager_retries
):
    kube_emulator.fail(503, method="GET", path="/api/v1/nodes", times=20)

    result = cluster_sync_task.delay("main")

    assert result.state == "FAILURE"
    assert isinstance(result.result, TransientFleetError)
    runs = InventoryRun.objects.filter(kind="cluster-sync")
    assert runs.count() == 4  # the first try and three retries, each recorded
    assert not runs.filter(ok=True).exists()
    assert "503" in runs.first().error


@pytest.mark.django_db
def test_sync_labels_and_taints_reserved_nodes_and_clears_a_released_one(
    kube_emulator, kube_gateway, django_capture_on_commit_callbacks
):
    from inventory.node_labels import RESERVED_FOR_KEY

    other_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    reserved = node("h200-1", plain_labels("h200-1", product="NVIDIA-H200", count=8,
                                           memory_mib=144384), gpus=8)
    reserved["spec"]["taints"] = [other_taint]
    released = node("h200-2", plain_labels("h200-2", product="NVIDIA-H200", count=8,
                                           memory_mib=144384) | {RESERVED_FOR_KEY: "helix"},
                    gpus=8)
    released["spec"]["taints"] = [
        {"key": RESERVED_FOR_KEY, "value": "helix", "effect": "NoSchedule"}
    ]
    kube_emulator.put_object(reserved)
    kube_emulator.put_object(released)
    NodeFactory(hostname="h200-1", k8s_name="h200-1", reserved_for="helix")
    NodeFactory(hostname="h200-2", k8s_name="h200-2", reserved_for="")

    with django_capture_on_commit_callbacks(execute=True):
        run = cluster_sync(cluster="main")

    assert sorted(run.summary["reservations_settled"]) == ["h200-1", "h200-2"]
    one = kube_emulator.get_object("v1", "Node", "h200-1", None)
    assert one["metadata"]["labels"][RESERVED_FOR_KEY] == "helix"
    assert one["spec"]["taints"] == [
        other_taint, {"key": RESERVED_FOR_KEY, "value": "helix", "effect": "NoSchedule"}
    ]
    two = kube_emulator.get_object("v1", "Node", "h200-2", None)
    assert RESERVED_FOR_KEY not in two["metadata"]["labels"]
    assert not two["spec"].get("taints")

    patches = len(kube_emulator.requests("PATCH"))
    with django_capture_on_commit_callbacks(execute=True):
        again = cluster_sync(cluster="main")
    assert again.summary["reservations_settled"] == []
    assert len(kube_emulator.requests("PATCH")) == patches


@pytest.mark.django_db
def test_sync_recognises_a_hami_node_and_counts_its_pods_as_shares(kube_emulator, kube_gateway):
    kube_emulator.put_object(HAMI_NODE)
    kube_emulator.put_object(hami_node("l40s-hami-2", register=None))  # plugin not up yet
    kube_emulator.put_object(hami_node("l40s-hami-3", register="GPU-0,10,bad"))
    kube_emulator.put_object(node(RTX_NODE, RTX_LABELS, gpus=1, cpu="8", memory="32779776Ki"))
    kube_emulator.put_object(hami_pod("chat-0", "tenant-nova", "l40s-hami-1", gpumem=12288,
                                      gpucores=30))
    kube_emulator.put_object(hami_pod("eval-0", "tenant-atlas", "l40s-hami-1", vgpus=2,
                                      gpumem_percentage=25, gpucores=10))
    kube_emulator.put_object(hami_pod("big-0", "tenant-atlas", "l40s-hami-1"))
    kube_emulator.put_object(pod("llm-0", "tenant-acme", RTX_NODE, gpus=1))

    run = cluster_sync(cluster="main")

    assert sorted(run.summary["hami_nodes"]) == ["l40s-hami-1", "l40s-hami-2", "l40s-hami-3"]
    assert list(run.summary["hami_unreadable"]) == ["l40s-hami-3"]
    shared = Node.objects.get(k8s_name="l40s-hami-1")
    assert shared.gpu_sharing == "hami" and shared.role == "gpu-worker"
    assert list(shared.gpus.values_list("index", "model", "memory_gib"))[:2] == [
        (0, "nvidia-l40s", 45), (1, "nvidia-l40s", 45)
    ]
    assert shared.gpus.count() == 8  # GPUs, not the 80 vGPUs of status.capacity
    assert len(shared.hami_devices) == 8
    assert shared.hami_devices[5]["health"] is False and shared.hami_devices[0]["cores"] == 100
    assert shared.gpus_in_use == 0  # vGPUs are shares, not whole GPUs
    quarter = -(-25 * 2 * 46068 // 100)
    assert shared.hami_in_use == {
        "vgpus": 4, "memory_mib": 12288 + quarter + 46068, "cores": 30 + 20,
    }
    chat = next(p for p in shared.placed_pods if p["name"] == "chat-0")
    assert chat["hami"] == {"memory_mib": 12288, "cores": 30}
    waiting = Node.objects.get(k8s_name="l40s-hami-2")
    assert (waiting.gpu_sharing, waiting.hami_devices, waiting.gpus.count()) == ("hami", [], 0)
    assert waiting.role == "gpu-worker"  # labelled for HAMi; its 80 vGPUs are not 80 GPUs
    assert "l40s-hami-2" not in run.summary["unknown_products"]
    whole = Node.objects.get(k8s_name=RTX_NODE)
    assert (whole.gpu_sharing, whole.gpus_in_use, whole.hami_in_use) == ("whole", 1, {})

    again = cluster_sync(cluster="main")
    assert again.summary["updated"] == [] and again.summary["created"] == []
