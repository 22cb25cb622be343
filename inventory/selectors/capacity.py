"""GPU capacity per resource class, from the inventory alone (grants live in tenants).

A GPU partitioned by MIG counts under its MIG profiles (`mig:<model>:<profile>`), not as a whole
GPU (`gpu:<model>`), so no unit is counted twice. Retired nodes count for nothing.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Q, Sum

from .. import resource_classes
from ..models import GPU, Node, NodeState


@dataclass
class InventoryCapacity:
    installed: int = 0
    healthy: int = 0
    reserved: int = 0
    in_use: int = 0


def gpu_capacity_by_class() -> dict[str, InventoryCapacity]:
    """installed, healthy (GPU healthy and its node available), reserved (on nodes reserved
    for a dedicated tenant) and in use (GPU requests of pods the last cluster sync saw) per
    GPU resource class key. Two queries; the arithmetic is over one row per GPU."""
    totals: dict[str, InventoryCapacity] = defaultdict(InventoryCapacity)
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
            row = totals[key]
            row.installed += 1
            row.healthy += healthy
            row.reserved += bool(reserved_for)
    in_use = Node.objects.exclude(state=NodeState.RETIRED).values_list(
        "pk", "gpus_in_use", "mig_in_use"
    )
    for node_id, gpus_in_use, mig_in_use in in_use.iterator(chunk_size=5000):
        model = node_model.get(node_id)
        if model is None:
            continue
        if gpus_in_use:
            totals[resource_classes.gpu_class(model)].in_use += gpus_in_use
        for profile, count in (mig_in_use or {}).items():
            totals[resource_classes.mig_model_key(model, profile)].in_use += count
    return dict(totals)


def node_capacity_by_class() -> dict[str, InventoryCapacity]:
    """vCPUs (`cpu`) and memory (`memory-gib`) of GPU and CPU workers that are not retired:
    installed, healthy (on available nodes) and reserved; in use is not measured yet (0)."""
    workers = Node.objects.exclude(state=NodeState.RETIRED).exclude(
        role=Node.Role.CONTROL_PLANE
    )
    totals = workers.aggregate(
        cpu=Sum("cpu_cores"),
        cpu_ok=Sum("cpu_cores", filter=Q(state=NodeState.AVAILABLE)),
        cpu_reserved=Sum("cpu_cores", filter=~Q(reserved_for="")),
        mem=Sum("memory_gib"),
        mem_ok=Sum("memory_gib", filter=Q(state=NodeState.AVAILABLE)),
        mem_reserved=Sum("memory_gib", filter=~Q(reserved_for="")),
    )
    if not totals["cpu"] and not totals["mem"]:
        return {}
    return {
        "cpu": InventoryCapacity(
            installed=totals["cpu"] or 0,
            healthy=totals["cpu_ok"] or 0,
            reserved=totals["cpu_reserved"] or 0,
        ),
        "memory-gib": InventoryCapacity(
            installed=totals["mem"] or 0,
            healthy=totals["mem_ok"] or 0,
            reserved=totals["mem_reserved"] or 0,
        ),
    }
