"""What runs on a node, read from Pod objects: placement, GPU requests, and who may be evicted.

On a node whose GPUs HAMi shares, `nvidia.com/gpu` counts vGPUs, and each vGPU holds
`nvidia.com/gpumem` MiB (or `nvidia.com/gpumem-percentage` of its GPU's memory; neither: all of
it, HAMi's default) and `nvidia.com/gpucores` percent of its GPU's compute (default 0): a
container's share is those times its vGPUs, as HAMi's scheduler counts it.
Pure functions over Pod dicts as the fleet gateway returns them (no ORM, no I/O).
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .resource_classes import (
    GPU_RESOURCE,
    HAMI_CORES_RESOURCE,
    HAMI_MEMORY_PERCENT_RESOURCE,
    HAMI_MEMORY_RESOURCE,
)

MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
# A container's HAMi share, totalled over the pod like the extended resources.
HAMI_MEMORY_KEY = "hami:memory_mib"
HAMI_PERCENT_KEY = "hami:memory_percent"
HAMI_CORES_KEY = "hami:cores"


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
    # What the vGPUs hold if HAMi serves them: memory_mib, memory_percent (of one GPU), cores.
    hami: dict[str, int] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_PHASES

    @property
    def evictable(self) -> bool:
        """What `kubectl drain --ignore-daemonsets` evicts: no DaemonSet, mirror or done pods."""
        return not (self.daemon_set or self.mirror or self.finished)

    def as_record(self, *, hami: bool = False) -> dict[str, Any]:
        record = {"namespace": self.namespace, "name": self.name, "gpus": self.gpus,
                  "mig": self.mig}
        if hami and self.gpus:
            record["hami"] = self.hami
        return record

    def hami_memory_mib(self, gpu_memory_mib: int) -> int:
        """The GPU memory its vGPUs hold, on GPUs of `gpu_memory_mib` each."""
        percent = self.hami.get("memory_percent", 0)
        return self.hami.get("memory_mib", 0) + -(-percent * gpu_memory_mib // 100)


def _quantity(value: Any) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def _container_requests(container: dict[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    # Extended resources must be requested equal to their limit; either one may be written.
    merged = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
    found = {
        key: _quantity(value)
        for key, value in merged.items()
        if key == GPU_RESOURCE or key.startswith(MIG_RESOURCE_PREFIX)
    }
    vgpus = found.get(GPU_RESOURCE, 0)
    if vgpus:
        memory = _quantity(merged.get(HAMI_MEMORY_RESOURCE))
        percent = min(100, _quantity(merged.get(HAMI_MEMORY_PERCENT_RESOURCE)))
        if memory > 0:
            found[HAMI_MEMORY_KEY] = memory * vgpus
        else:  # a percentage, or all of the GPU's memory (HAMi's default)
            found[HAMI_PERCENT_KEY] = (percent if percent > 0 else 100) * vgpus
        found[HAMI_CORES_KEY] = max(0, _quantity(merged.get(HAMI_CORES_RESOURCE))) * vgpus
    return found


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
    hami = {
        key.removeprefix("hami:"): totals.pop(key)
        for key in (HAMI_MEMORY_KEY, HAMI_PERCENT_KEY, HAMI_CORES_KEY)
        if key in totals
    }
    return PodPlacement(
        namespace=meta.get("namespace") or "",
        name=meta.get("name") or "",
        node_name=spec.get("nodeName") or "",
        phase=(pod.get("status") or {}).get("phase") or "",
        gpus=totals.pop(GPU_RESOURCE, 0),
        mig={key.removeprefix(MIG_RESOURCE_PREFIX): n for key, n in sorted(totals.items()) if n},
        hami={key: n for key, n in sorted(hami.items()) if n},
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
