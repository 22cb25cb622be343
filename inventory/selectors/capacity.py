"""GPU and node capacity per resource class, from the inventory alone (grants live in tenants).

Counted per pool, in one pass: a pool is the nodes reserved for one dedicated tenant (keyed by its
slug) or the shared pool (key `SHARED_POOL`: nodes reserved for nobody). Reserved nodes carry a
NoSchedule taint, so a shared tenant's pods cannot land on them: what a tenant can schedule is its
pool's, never the fleet's. The fleet's totals are the pools' sums.

A GPU partitioned by MIG counts under its MIG profiles (`mig:<model>:<profile>`), not as a whole
GPU (`gpu:<model>`), so no unit is counted twice. Likewise a GPU on a node whose GPUs HAMi shares
counts only as HAMi shares: `hami:<model>:memory-gib` (the GiB of GPU memory HAMi registered for
it, whole GiB; its own memory until HAMi has registered it) and `hami:<model>:cores` (100 per
GPU, or what HAMi registered). It is in service only once HAMi has registered it healthy. HAMi's
shares in use are what the node's pods ask for through HAMi (memory rounded up to whole GiB).
Retired nodes count for nothing.
"""

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Case, Count, F, IntegerField, OuterRef, Q, Subquery, Sum, When
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from .. import resource_classes
from ..models import GPU, GpuSharing, Node, NodeState

SHARED_POOL = ""

# pool (a tenant slug, or SHARED_POOL) → resource class key → counts
PoolCapacity = dict[str, dict[str, "InventoryCapacity"]]
# cluster slug → its pools (each cluster's nodes are pools of their own: a pod runs on one)
ClusterCapacity = dict[str, PoolCapacity]


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


def _clusters() -> ClusterCapacity:
    return defaultdict(_pools)


def _merged(clusters: ClusterCapacity) -> PoolCapacity:
    """Every cluster's pools summed into the fleet's."""
    pools = _pools()
    for cluster_pools in clusters.values():
        for pool, rows in cluster_pools.items():
            for key, counts in rows.items():
                pools[pool][key].add(counts)
    return pools


def _registered(devices: list[dict[str, Any]] | None) -> dict[int, dict[str, Any]]:
    """HAMi's registered devices of a node, by GPU index."""
    return {d.get("index", i): d for i, d in enumerate(devices or []) if isinstance(d, dict)}


def hami_share_of(
    index: int, memory_gib: int, registered: dict[int, dict[str, Any]]
) -> tuple[int, int, bool]:
    """(GiB of memory, percent of compute, registered healthy) one GPU offers through HAMi."""
    device = registered.get(index)
    if device is None:
        return memory_gib, 100, False
    return (
        int(device.get("memory_mib") or 0) // resource_classes.MIB_PER_GIB,
        int(device.get("cores") or 0),
        bool(device.get("health")),
    )


def _in_use_groups() -> tuple[list[dict[str, Any]], dict[int, dict[int, dict[str, Any]]]]:
    """What pods use, summed by PostgreSQL per pool, GPU model (a node's in-use counts are
    charged to its first GPU's model) and MIG use; and what HAMi registered on each node that
    HAMi shares. Nodes HAMi shares come one row each (their registrations), the others in a
    few groups: one query, whose rows grow with the HAMi nodes only."""
    first_model = GPU.objects.filter(node=OuterRef("pk")).order_by("index").values("model")[:1]
    hami = Q(gpu_sharing=GpuSharing.HAMI)

    def hami_in_use(key: str) -> Coalesce:
        # What the cluster sync saw HAMi's pods take on the node (0 if it saw nothing).
        return Coalesce(Sum(Cast(KT(f"hami_in_use__{key}"), IntegerField()), filter=hami), 0)

    rows = (
        Node.objects.exclude(state=NodeState.RETIRED)
        .annotate(
            gpu_model=Subquery(first_model),
            hami_node=Case(When(hami, then=F("pk"))),
            hami_registered=Case(When(hami, then=F("hami_devices"))),
        )
        .values("cluster_id", "reserved_for", "gpu_model", "mig_in_use", "hami_node",
                "hami_registered")
        .annotate(
            nodes=Count("pk"),
            gpus=Sum("gpus_in_use"),
            hami_mib=hami_in_use("memory_mib"),
            hami_cores=hami_in_use("cores"),
        )
        .order_by()
    )
    # Nodes without GPUs are dropped here, not by `.filter(gpu_model__isnull=False)`: that
    # filter made PostgreSQL run the first-GPU subquery twice per node (half this query's time
    # at 2,000 nodes); their few groups cost nothing to skip.
    groups = [group for group in rows if group["gpu_model"] is not None]
    hami_nodes = {
        group["hami_node"]: _registered(group["hami_registered"])
        for group in groups
        if group["hami_node"] is not None
    }
    return groups, hami_nodes


def gpu_capacity_by_pool() -> PoolCapacity:
    """The fleet's pools: `gpu_capacity_by_cluster()` summed over the clusters."""
    return _merged(gpu_capacity_by_cluster())


def gpu_capacity_by_cluster() -> ClusterCapacity:
    """Per cluster, pool and GPU resource class key: installed, healthy (GPU healthy and its node
    available; under HAMi also registered healthy), reserved (on nodes reserved for a dedicated
    tenant) and in use (what pods the last cluster sync saw ask for). Two queries: one row per
    node (with its GPUs' model), and the GPUs counted in SQL per pool, model and MIG layout;
    only GPUs HAMi shares come one row each, as what each offers depends on what HAMi
    registered for it. Python's work grows with the nodes, not with the GPUs."""
    clusters = _clusters()
    in_use, hami_nodes = _in_use_groups()
    hami = Q(node__gpu_sharing=GpuSharing.HAMI)
    groups = (
        GPU.objects.exclude(node__state=NodeState.RETIRED)
        .annotate(
            hami_node=Case(When(hami, then=F("node_id"))),
            hami_index=Case(When(hami, then=F("index"))),
            hami_memory=Case(When(hami, then=F("memory_gib"))),
        )
        .values("node__cluster_id", "node__reserved_for", "model", "mig_layout", "hami_node",
                "hami_index", "hami_memory")
        .annotate(
            gpus=Count("id"),
            healthy=Count(
                "id", filter=Q(health=GPU.Health.HEALTHY, node__state=NodeState.AVAILABLE)
            ),
        )
        .order_by()
    )
    for group in groups:
        reserved_for, model, gpus = group["node__reserved_for"], group["model"], group["gpus"]
        pools, healthy = clusters[group["node__cluster_id"]], group["healthy"]
        if group["hami_node"] is not None:  # one GPU
            memory, cores, registered = hami_share_of(
                group["hami_index"], group["hami_memory"],
                hami_nodes.get(group["hami_node"], {}),
            )
            units = [
                (resource_classes.hami_key(model, "memory-gib"), memory),
                (resource_classes.hami_key(model, "cores"), cores),
            ]
            healthy = healthy if registered else 0
        elif group["mig_layout"]:
            units = [(resource_classes.mig_model_key(model, p), 1) for p in group["mig_layout"]]
        else:
            units = [(resource_classes.gpu_class(model), 1)]
        for key, amount in units:
            row = pools[reserved_for][key]
            row.installed += amount * gpus
            row.healthy += amount * healthy
            row.reserved += amount * gpus if reserved_for else 0
    hami_mib: dict[tuple[str, str, str], int] = defaultdict(int)
    for group in in_use:
        reserved_for, model = group["reserved_for"], group["gpu_model"]
        pools = clusters[group["cluster_id"]]
        if group["gpus"]:
            pools[reserved_for][resource_classes.gpu_class(model)].in_use += group["gpus"]
        for profile, count in (group["mig_in_use"] or {}).items():
            pools[reserved_for][resource_classes.mig_model_key(model, profile)].in_use += (
                count * group["nodes"]
            )
        if group["hami_node"] is not None:
            hami_mib[(group["cluster_id"], reserved_for, model)] += group["hami_mib"]
            cores = resource_classes.hami_key(model, "cores")
            pools[reserved_for][cores].in_use += group["hami_cores"]
    for (cluster, reserved_for, model), mib in hami_mib.items():
        memory = resource_classes.hami_key(model, "memory-gib")
        clusters[cluster][reserved_for][memory].in_use += -(-mib // resource_classes.MIB_PER_GIB)
    return clusters


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
    no single pod or VM can ask for more. For HAMi shares, the most one GPU of the pool offers
    (its memory in GiB, its compute in percent): a vGPU lives on one GPU. Two queries: whole
    and MIG GPUs counted in SQL per node, model and MIG layout (a row per node, not per GPU:
    every launch asks, and a shared pool holds most of the fleet), HAMi GPUs one row each."""
    per_node: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    per_gpu: dict[str, int] = {}
    gpus = GPU.objects.exclude(node__state=NodeState.RETIRED).filter(node__reserved_for=pool)
    grouped = (
        gpus.exclude(node__gpu_sharing=GpuSharing.HAMI)
        .values_list("node_id", "model", "mig_layout")
        .annotate(count=Count("id"))
        .order_by()
    )
    for node_id, model, layout, count in grouped:
        if layout:
            for profile in layout:
                per_node[node_id][resource_classes.mig_model_key(model, profile)] += count
        else:
            per_node[node_id][resource_classes.gpu_class(model)] += count
    shared = gpus.filter(node__gpu_sharing=GpuSharing.HAMI).values_list(
        "index", "model", "memory_gib", "node__hami_devices"
    )
    for index, model, memory_gib, devices in shared.iterator(chunk_size=5000):
        memory, cores, _ = hami_share_of(index, memory_gib, _registered(devices))
        for key, amount in (
            (resource_classes.hami_key(model, "memory-gib"), memory),
            (resource_classes.hami_key(model, "cores"), cores),
        ):
            per_gpu[key] = max(per_gpu.get(key, 0), amount)
    largest: dict[str, int] = {key: amount for key, amount in per_gpu.items() if amount > 0}
    for counts in per_node.values():
        for key, count in counts.items():
            largest[key] = max(largest.get(key, 0), count)
    return largest
