"""Read the cluster's Node objects (and where pods run) into the inventory.

Idempotent: a second run over the same cluster changes nothing. A node only the cluster knows
is created as `discovered` (unracked, for an admin to place); a node only the inventory knows is
reported, never deleted. Cordon drift is settled towards safety: a node cordoned in the cluster
but available here is recorded as cordoned; a node the portal took out of service but that is
schedulable in the cluster is cordoned again.

A node whose GPUs HAMi shares (its `gpu=on` label or register annotation) is recorded as such,
with what HAMi registered; its pods' `nvidia.com/gpu` are vGPUs, so they count as HAMi memory
and compute in use (`hami_in_use`), not as whole GPUs.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from core.audit import audit
from core.fleet import FleetError, FleetGateway, get_gateway

from .. import queueing
from ..models import DEFAULT_CLUSTER, GPU, Cluster, GpuSharing, InventoryRun, Node, NodeState
from ..models.node import UNSCHEDULABLE_IN_STATE
from ..node_labels import ObservedNode, parse_node, reservation_patch
from ..pods import PodPlacement, placements_by_node
from . import health, lifecycle

NODE_FIELDS = (
    "cpu_cores", "memory_gib", "k8s_last_seen_at", "k8s_ready", "k8s_unschedulable",
    "k8s_conditions", "k8s_labels", "k8s_capacity", "placed_pods", "gpus_in_use", "mig_in_use",
    "gpu_sharing", "hami_devices", "hami_in_use",
)
GPU_FIELDS = ("mig_capable", "mig_layout", "nvlink_domain")
DRAIN_STUCK_AFTER = timedelta(minutes=15)


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    only_in_inventory: list[str] = field(default_factory=list)
    unknown_products: dict[str, str] = field(default_factory=dict)
    gpu_count_mismatch: dict[str, list[int]] = field(default_factory=dict)
    model_mismatch: dict[str, list[str]] = field(default_factory=dict)
    hostname_conflicts: list[str] = field(default_factory=list)
    adopted_cordons: list[str] = field(default_factory=list)
    recordoned: list[str] = field(default_factory=list)
    reservations_settled: list[str] = field(default_factory=list)
    drains_resumed: list[str] = field(default_factory=list)
    hami_nodes: list[str] = field(default_factory=list)
    hami_unreadable: dict[str, str] = field(default_factory=dict)
    gpus_created: int = 0

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


def _hami_in_use(obs: ObservedNode, pods: list[PodPlacement]) -> dict[str, int]:
    """What the node's vGPUs hold: GPU memory (MiB), compute (percent) and how many."""
    sharing = [p for p in pods if p.gpus]
    if not sharing:
        return {}
    per_gpu_mib = (
        obs.hami_devices[0].memory_mib if obs.hami_devices else obs.gpu_memory_gib * 1024
    )
    return {
        "vgpus": sum(p.gpus for p in sharing),
        "memory_mib": sum(p.hami_memory_mib(per_gpu_mib) for p in sharing),
        "cores": sum(p.hami.get("cores", 0) for p in sharing),
    }


def _observed_values(obs: ObservedNode, pods: list[PodPlacement]) -> dict:
    mig_in_use: dict[str, int] = {}
    for pod in pods:
        for profile, count in pod.mig.items():
            mig_in_use[profile] = mig_in_use.get(profile, 0) + count
    hami = obs.gpu_sharing == GpuSharing.HAMI
    ordered = sorted(pods, key=lambda p: (p.namespace, p.name))
    values = {
        "k8s_ready": obs.ready,
        "k8s_unschedulable": obs.unschedulable,
        "k8s_conditions": obs.conditions,
        "k8s_labels": obs.labels,
        "k8s_capacity": obs.capacity,
        "placed_pods": [p.as_record(hami=hami) for p in ordered],
        # Under HAMi `nvidia.com/gpu` counts vGPUs: shares, not whole GPUs.
        "gpus_in_use": 0 if hami else sum(p.gpus for p in pods),
        "mig_in_use": dict(sorted(mig_in_use.items())),
        "gpu_sharing": obs.gpu_sharing,
        "hami_devices": [d.as_record() for d in obs.hami_devices],
        "hami_in_use": _hami_in_use(obs, pods) if hami else {},
    }
    if obs.cpu_cores is not None:
        values["cpu_cores"] = obs.cpu_cores
    if obs.memory_gib is not None:
        values["memory_gib"] = obs.memory_gib
    return values


def _sync_gpus(node: Node, obs: ObservedNode, existing: list[GPU], report: SyncReport) -> tuple[
    list[GPU], list[GPU]
]:
    """GPUs to create and to update so the node's GPUs match what the cluster reports."""
    if not obs.has_gpus:
        return [], []
    if obs.gpu_model is None:
        report.unknown_products[node.k8s_name] = obs.gpu_product
        return [], []
    by_index = {gpu.index: gpu for gpu in existing}
    layouts = obs.mig_layouts()
    wanted = {
        index: {
            "mig_capable": obs.mig_capable,
            "mig_layout": layouts[index] if obs.mig_strategy in ("single", "mixed") else [],
            "nvlink_domain": obs.nvlink_domain,
        }
        for index in range(obs.gpu_count)
    }
    create, update = [], []
    for index, values in wanted.items():
        gpu = by_index.get(index)
        if gpu is None:
            create.append(GPU(node=node, index=index, model=obs.gpu_model.key,
                              memory_gib=obs.gpu_memory_gib or obs.gpu_model.memory_gib, **values))
            continue
        if gpu.model != obs.gpu_model.key:
            report.model_mismatch.setdefault(node.k8s_name, []).append(
                f"GPU{index}: inventory {gpu.model}, cluster {obs.gpu_model.key}"
            )
        if any(getattr(gpu, k) != v for k, v in values.items()):
            for key, value in values.items():
                setattr(gpu, key, value)
            update.append(gpu)
    if len(existing) != obs.gpu_count:
        report.gpu_count_mismatch[node.k8s_name] = [len(existing), obs.gpu_count]
    return create, update


@transaction.atomic
def inventory_observed_apply(
    *, nodes: list[ObservedNode], pods: dict[str, list[PodPlacement]],
    cluster: str = DEFAULT_CLUSTER,
) -> SyncReport:
    """Create or update the inventory nodes and GPUs of `cluster` from what it reports."""
    report, now = SyncReport(), timezone.now()
    inventory = {
        n.k8s_name: n
        for n in Node.objects.select_for_update().filter(cluster_id=cluster)
        .prefetch_related("gpus")
    }
    hostnames = set(Node.objects.values_list("hostname", flat=True))
    seen: set[str] = set()
    node_updates: list[Node] = []
    gpu_creates: list[GPU] = []
    gpu_updates: list[GPU] = []
    for obs in nodes:
        seen.add(obs.name)
        node = inventory.get(obs.name)
        values = _observed_values(obs, pods.get(obs.name, []))
        if obs.gpu_sharing == GpuSharing.HAMI:
            report.hami_nodes.append(obs.name)
        if obs.hami_register_error:
            report.hami_unreadable[obs.name] = obs.hami_register_error
        if node is None:
            if obs.hostname in hostnames:
                report.hostname_conflicts.append(obs.name)
                continue
            node = Node.objects.create(
                cluster_id=cluster, hostname=obs.hostname, k8s_name=obs.name, role=obs.role,
                state=NodeState.DISCOVERED, k8s_last_seen_at=now, **values,
            )
            hostnames.add(obs.hostname)
            report.created.append(obs.name)
            audit(actor=None, action="node.discover", obj=node,
                  changes={"cluster": cluster, "k8s_name": obs.name,
                           "gpu_product": obs.gpu_product,
                           "gpu_count": obs.gpu_count})
            existing_gpus: list[GPU] = []
        else:
            changed = {k: v for k, v in values.items() if getattr(node, k) != v}
            if changed:
                for key, value in changed.items():
                    setattr(node, key, value)
                report.updated.append(obs.name)
            node.k8s_last_seen_at = now
            node_updates.append(node)
            existing_gpus = list(node.gpus.all())
        create, update = _sync_gpus(node, obs, existing_gpus, report)
        gpu_creates += create
        gpu_updates += update
        known = obs.name in report.created or obs.name in report.updated
        if (create or update) and not known:
            report.updated.append(obs.name)
        _settle_cordon(node, obs, report)
        _resume_stuck_drain(node, now, report)
        _settle_reservation(node, obs, report)
        health.node_readiness_record(
            node=node,
            ready=obs.ready,
            message=next((c["message"] for c in obs.conditions if c["type"] == "Ready"), ""),
        )
    Node.objects.bulk_update(node_updates, NODE_FIELDS, batch_size=500)
    GPU.objects.bulk_create(gpu_creates, batch_size=1000)
    GPU.objects.bulk_update(gpu_updates, GPU_FIELDS, batch_size=1000)
    report.gpus_created = len(gpu_creates)
    report.only_in_inventory = sorted(
        name for name, node in inventory.items()
        if name not in seen and node.state != NodeState.RETIRED
    )
    return report


def _settle_cordon(node: Node, obs: ObservedNode, report: SyncReport) -> None:
    desired = UNSCHEDULABLE_IN_STATE[NodeState(node.state)]
    if desired is False and obs.unschedulable:
        lifecycle.node_cordon(
            node_id=node.pk, actor=None,
            reason="cordoned in the cluster (marked unschedulable there), observed by the sync",
        )
        node.state = NodeState.CORDONED
        report.adopted_cordons.append(obs.name)
    elif desired is True and not obs.unschedulable:
        queueing.enqueue_on_commit(queueing.SCHEDULABILITY, node.pk, cluster=node.cluster_id)
        report.recordoned.append(obs.name)


def _resume_stuck_drain(node: Node, now: datetime, report: SyncReport) -> None:
    """A drain whose task was lost, or gave up retrying, is queued again: the sync is the
    periodic sweep that keeps level-triggered work moving. A recent drain is left to its task."""
    if node.state == NodeState.DRAINING and now - node.state_changed_at > DRAIN_STUCK_AFTER:
        queueing.enqueue_on_commit(queueing.DRAIN, node.pk, None, cluster=node.cluster_id)
        report.drains_resumed.append(node.k8s_name)


def _settle_reservation(node: Node, obs: ObservedNode, report: SyncReport) -> None:
    """The inventory says which tenant a node is reserved for; the node's label and taint
    follow it (dedicated tenants' queues select the label and tolerate the taint)."""
    if reservation_patch(
        reserved_for=node.reserved_for, observed_label=obs.reserved_for, taints=obs.taints
    ) is not None:
        queueing.enqueue_on_commit(queueing.RESERVATION, node.pk, cluster=node.cluster_id)
        report.reservations_settled.append(obs.name)


def cluster_sync(*, cluster: str, gateway: FleetGateway | None = None) -> InventoryRun:
    """Read every Node and Pod of `cluster` through the gateway and apply them; a failed read
    is recorded on the run and re-raised (the task retries what is transient)."""
    gateway = gateway or get_gateway(cluster)
    run = InventoryRun.objects.create(kind=InventoryRun.Kind.CLUSTER_SYNC, cluster_id=cluster)
    try:
        node_objects = gateway.list_nodes()
        pod_objects = gateway.list(api_version="v1", kind="Pod")
    except FleetError as exc:
        InventoryRun.objects.filter(pk=run.pk).update(
            finished_at=timezone.now(), ok=False, error=str(exc)[:2000]
        )
        raise
    observed = [parse_node(obj) for obj in node_objects]
    report = inventory_observed_apply(
        nodes=observed, pods=placements_by_node(pod_objects), cluster=cluster
    )
    run.finished_at, run.ok = timezone.now(), True
    run.summary = {**report.as_dict(), "cluster_nodes": len(observed)}
    run.save(update_fields=["finished_at", "ok", "summary"])
    if report.created or report.adopted_cordons:
        audit(actor=None, action="inventory.sync", obj=None,
              changes={"cluster": cluster, "created": report.created[:100],
                       "adopted_cordons": report.adopted_cordons})
    return run


def clusters_sync_sweep() -> int:
    """Queue a sync of each cluster in service; how many were queued."""
    clusters = list(Cluster.objects.in_service().values_list("slug", flat=True))
    for cluster in clusters:
        queueing.send_task(queueing.CLUSTER_SYNC, cluster, cluster=cluster)
    return len(clusters)
