"""What runs on a node, read from Pod objects: placement, GPU requests, and who may be evicted.

Pure functions over Pod dicts as the fleet gateway returns them (no ORM, no I/O).
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .resource_classes import GPU_RESOURCE

MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class PodPlacement:
    namespace: str
    name: str
    node_name: str
    phase: str
    gpus: int = 0
    mig: dict[str, int] = field(default_factory=dict)
    daemon_set: bool = False
    mirror: bool = False

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_PHASES

    @property
    def evictable(self) -> bool:
        """What `kubectl drain --ignore-daemonsets` evicts: no DaemonSet, mirror or done pods."""
        return not (self.daemon_set or self.mirror or self.finished)

    def as_record(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "name": self.name, "gpus": self.gpus, "mig": self.mig}


def _quantity(value: Any) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def _container_requests(container: dict[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    # Extended resources must be requested equal to their limit; either one may be written.
    merged = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
    return {
        key: _quantity(value)
        for key, value in merged.items()
        if key == GPU_RESOURCE or key.startswith(MIG_RESOURCE_PREFIX)
    }


def pod_placement(pod: dict[str, Any]) -> PodPlacement:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    totals: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for key, amount in _container_requests(container).items():
            totals[key] = totals.get(key, 0) + amount
    # An init container runs before the others, so the pod holds the larger of the two.
    for container in spec.get("initContainers") or []:
        for key, amount in _container_requests(container).items():
            totals[key] = max(totals.get(key, 0), amount)
    owners = meta.get("ownerReferences") or []
    return PodPlacement(
        namespace=meta.get("namespace") or "",
        name=meta.get("name") or "",
        node_name=spec.get("nodeName") or "",
        phase=(pod.get("status") or {}).get("phase") or "",
        gpus=totals.pop(GPU_RESOURCE, 0),
        mig={key.removeprefix(MIG_RESOURCE_PREFIX): n for key, n in sorted(totals.items()) if n},
        daemon_set=any(owner.get("kind") == "DaemonSet" for owner in owners),
        mirror=MIRROR_ANNOTATION in (meta.get("annotations") or {}),
    )


def placements_by_node(pods: Iterable[dict[str, Any]]) -> dict[str, list[PodPlacement]]:
    """Scheduled, unfinished pods grouped by the node they run on."""
    by_node: dict[str, list[PodPlacement]] = {}
    for pod in pods:
        placement = pod_placement(pod)
        if placement.node_name and not placement.finished:
            by_node.setdefault(placement.node_name, []).append(placement)
    return by_node
