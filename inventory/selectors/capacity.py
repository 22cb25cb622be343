"""GPU and node capacity per resource class, from the inventory alone (grants live in tenants).

Counted per pool, in one pass: a pool is the nodes reserved for one dedicated tenant (keyed by its
slug) or the shared pool (key `SHARED_POOL`: nodes reserved for nobody). Reserved nodes carry a
NoSchedule taint, so a shared tenant's pods cannot land on them: what a tenant can schedule is its
pool's, never the fleet's. The fleet's totals are the pools' sums.

A GPU partitioned by MIG counts under its MIG profiles (`mig:<model>:<profile>`), not as a whole
GPU (`gpu:<model>`), so no unit is counted twice. Retired nodes count for nothing.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Q, Sum

from .. import resource_classes
from ..models import GPU, Node, NodeState

SHARED_POOL = ""

# pool (a tenant slug, or SHARED_POOL) → resource class key → counts
PoolCapacity = dict[str, dict[str, "InventoryCapacity"]]


@dataclass
class InventoryCapacity:
    installed: int = 0
    healthy: int = 0
    reserved: int = 0
    in_use: int = 0

    def add(self, other: "InventoryCapacity") -> None:
        self.installed += other.installed
        self.healthy += other.healthy
        self.reserved += other.reserved
        self.in_use += other.in_use


def _pools() -> PoolCapacity:
    return defaultdict(lambda: defaultdict(InventoryCapacity))


def gpu_capacity_by_pool() -> PoolCapacity:
    """Per pool and GPU resource class key: installed, healthy (GPU healthy and its node
    available), reserved (on nodes reserved for a dedicated tenant) and in use (GPU requests of
    pods the last cluster sync saw). Two queries; the arithmetic is over one row per GPU."""
    pools = _pools()
    node_model: dict[int, str] = {}
    gpus = GPU.objects.exclude(node__state=NodeState.RETIRED).values_list(
        "node_id", "model", "mig_layout", "health", "node__state", "node__reserved_for"
    )
    for node_id, model, layout, health, state, reserved_for in gpus.iterator(chunk_size=5000):
        node_model.setdefault(node_id, model)
        healthy = health == GPU.Health.HEALTHY and state == NodeState.AVAILABLE
        units = (
            [resource_classes.mig_model_key(model, p) for p in layout]
            if layout
            else [resource_classes.gpu_class(model)]
        )
        for key in units:
            row = pools[reserved_for][key]
            row.installed += 1
            row.healthy += healthy
            row.reserved += bool(reserved_for)
    in_use = Node.objects.exclude(state=NodeState.RETIRED).values_list(
        "pk", "reserved_for", "gpus_in_use", "mig_in_use"
    )
    for node_id, reserved_for, gpus_in_use, mig_in_use in in_use.iterator(chunk_size=5000):
        model = node_model.get(node_id)
        if model is None:
            continue
        if gpus_in_use:
            pools[reserved_for][resource_classes.gpu_class(model)].in_use += gpus_in_use
        for profile, count in (mig_in_use or {}).items():
            pools[reserved_for][resource_classes.mig_model_key(model, profile)].in_use += count
    return pools


def node_capacity_by_pool() -> PoolCapacity:
    """Per pool: vCPUs (`cpu`) and memory (`memory-gib`) of GPU and CPU workers that are not
    retired: installed, healthy (on available nodes) and reserved; in use is not measured yet
    (0). One query."""
    rows = (
        Node.objects.exclude(state=NodeState.RETIRED)
        .exclude(role=Node.Role.CONTROL_PLANE)
        .values("reserved_for")
        .annotate(
            cpu=Sum("cpu_cores"),
            cpu_ok=Sum("cpu_cores", filter=Q(state=NodeState.AVAILABLE)),
            mem=Sum("memory_gib"),
            mem_ok=Sum("memory_gib", filter=Q(state=NodeState.AVAILABLE)),
        )
        .order_by()
    )
    pools = _pools()
    for row in rows:
        if not row["cpu"] and not row["mem"]:
            continue
        reserved = bool(row["reserved_for"])
        for key, total, ok in (("cpu", "cpu", "cpu_ok"), ("memory-gib", "mem", "mem_ok")):
            installed = row[total] or 0
            pools[row["reserved_for"]][key] = InventoryCapacity(
                installed=installed, healthy=row[ok] or 0, reserved=installed if reserved else 0
            )
    return pools


def capacity_by_pool() -> PoolCapacity:
    """GPU, MIG, vCPU and memory counts per pool and resource class (three queries)."""
    pools = gpu_capacity_by_pool()
    for pool, rows in node_capacity_by_pool().items():
        pools[pool].update(rows)
    return pools


def _fleet(pools: PoolCapacity) -> dict[str, InventoryCapacity]:
    totals: dict[str, InventoryCapacity] = defaultdict(InventoryCapacity)
    for rows in pools.values():
        for key, counts in rows.items():
            totals[key].add(counts)
    return dict(totals)


def gpu_capacity_by_class() -> dict[str, InventoryCapacity]:
    """The whole fleet's GPU counts per resource class key: every pool's, summed."""
    return _fleet(gpu_capacity_by_pool())


def node_capacity_by_class() -> dict[str, InventoryCapacity]:
    """The whole fleet's vCPU and memory counts: every pool's, summed."""
    return _fleet(node_capacity_by_pool())


def largest_node_by_class(*, pool: str) -> dict[str, int]:
    """Per GPU resource class, the most units one node of `pool` holds (nodes not retired):
    no single pod or VM can ask for more. One query over the pool's GPUs."""
    per_node: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    gpus = (
        GPU.objects.exclude(node__state=NodeState.RETIRED)
        .filter(node__reserved_for=pool)
        .values_list("node_id", "model", "mig_layout")
    )
    for node_id, model, layout in gpus.iterator(chunk_size=5000):
        if layout:
            for profile in layout:
                per_node[node_id][resource_classes.mig_model_key(model, profile)] += 1
        else:
            per_node[node_id][resource_classes.gpu_class(model)] += 1
    largest: dict[str, int] = {}
    for counts in per_node.values():
        for key, count in counts.items():
            largest[key] = max(largest.get(key, 0), count)
    return largest
