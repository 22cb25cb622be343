"""The simulated fleet's scheduler: where a pod an operator makes (or a VM's launcher pod) lands.

Pure: a node its selector matches, whose taints it tolerates and whose GPUs fit what it asks (as
GPU Feature Discovery labels them) beside what is already placed there, picked by the pod's
name; or the scheduler's verdict, in its words, when none does ("0/12 nodes are available: 4
Insufficient nvidia.com/gpu, ..."). A node's GPUs are what GPU Feature Discovery counts
(`nvidia.com/gpu.count`, `nvidia.com/mig-<profile>.count`); what is placed is every GPU and MIG
instance the pods bound to it (and the VMs' launcher pods) ask for (`used`, per node). A pod
HAMi's scheduler places (`schedulerName: hami-scheduler`) goes to a node HAMi shares that its
selector matches (the model's product label, once Kueue admitted it); HAMi's own bookkeeping of
shares is not played.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Manifest = dict[str, Any]
# node name → extended resource (`nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`) → units placed
Usage = Mapping[str, Mapping[str, int]]
GPU = "nvidia.com/gpu"
HAMI_SCHEDULER = "hami-scheduler"  # inventory.resource_classes.HAMI_SCHEDULER
HAMI_NODE_LABEL = ("gpu", "on")  # inventory.resource_classes.HAMI_NODE_LABEL


@dataclass(frozen=True)
class NodeView:
    """What the scheduler looks at on a node."""

    name: str
    labels: dict[str, str]
    taints: tuple[Manifest, ...] = ()
    unschedulable: bool = False
    # `status.allocatable`: what the device plugin offers, its unhealthy GPUs left out.
    allocatable: dict[str, str] = field(default_factory=dict)


def _tolerated(taint: Manifest, tolerations: Sequence[Manifest]) -> bool:
    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
        return True
    for toleration in tolerations:
        if toleration.get("key") not in (None, "", taint.get("key")):
            continue
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        if toleration.get("operator") == "Exists" or toleration.get("value") == taint.get(
            "value"
        ):
            return True
    return False


def _requests(pod_spec: Manifest) -> Manifest:
    requests: Manifest = {}
    for container in pod_spec.get("containers") or []:
        resources = container.get("resources") or {}
        requests |= {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return requests


def _units(value: Any) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def gpu_requests(pod_spec: Manifest) -> dict[str, int]:
    """The whole GPUs and MIG instances a pod asks for, summed over its containers, keyed as
    its node counts them: a GPU passed through to a VM (by its PCI name) is one of the node's
    `nvidia.com/gpu`. A pod HAMi places holds shares, not whole GPUs: nothing here."""
    if pod_spec.get("schedulerName") == HAMI_SCHEDULER:
        return {}
    asked: dict[str, int] = {}
    for container in pod_spec.get("containers") or []:
        resources = container.get("resources") or {}
        merged = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        for resource, value in merged.items():
            if not str(resource).startswith("nvidia.com/") or resource.startswith(
                ("nvidia.com/gpumem", "nvidia.com/gpucores")
            ):
                continue
            key = resource if resource.startswith("nvidia.com/mig-") else GPU
            asked[key] = asked.get(key, 0) + _units(value)
    return {key: units for key, units in asked.items() if units > 0}


def _room(node: NodeView, resource: str) -> int | None:
    """How many of `resource` the node has (None: it does not say, so it is not counted): its
    allocatable where the node reports one (a failed GPU is not offered), else the count GPU
    Feature Discovery labels."""
    if resource in node.allocatable:
        return _units(node.allocatable[resource])
    if resource == GPU:
        count = node.labels.get("nvidia.com/gpu.count")
    else:
        count = node.labels.get(f"{resource}.count")
    return None if count is None else _units(count)


def _names_product(device: str, product: str) -> bool:
    """A passthrough device's resource is the GPU's PCI database name (`GA100_A100_SXM4_80GB`):
    it names the product GPU Feature Discovery labels (`NVIDIA-A100-SXM4-80GB`) when it holds
    the product's model and its memory size."""
    words = {w.upper() for w in device.removeprefix("nvidia.com/").split("_")}
    wanted = [w.upper() for w in product.removeprefix("NVIDIA-").split("-") if w]
    return bool(wanted) and wanted[0] in words and all(
        w in words for w in wanted if w.endswith("GB")
    )


def _fits_resources(
    node: NodeView, requests: Manifest, pod_spec: Manifest, used: Usage
) -> bool:
    """GPU resources as GPU Feature Discovery labels them: a MIG profile where the node has
    instances of it; whole GPUs, or a GPU passed through to a VM (by its PCI name), where the
    node is not partitioned (and is of that model); and as many as are left beside what is
    placed there already. A pod HAMi places: a node HAMi shares."""
    if pod_spec.get("schedulerName") == HAMI_SCHEDULER:
        key, value = HAMI_NODE_LABEL
        return node.labels.get(key) == value
    partitioned = any(k.startswith("nvidia.com/mig-") for k in node.labels)
    placed = used.get(node.name) or {}
    for resource, units in gpu_requests(pod_spec).items():
        room = _room(node, resource)
        if room is not None and placed.get(resource, 0) + units > room:
            return False
    for resource in requests:
        if resource.startswith("nvidia.com/mig-"):
            profile = resource.removeprefix("nvidia.com/")
            if not int(node.labels.get(f"nvidia.com/{profile}.count", "0") or 0):
                return False
        elif resource.startswith("nvidia.com/"):
            if node.labels.get("nvidia.com/gpu.present") != "true" or partitioned:
                return False
            product = node.labels.get("nvidia.com/gpu.product", "")
            if resource != "nvidia.com/gpu" and not _names_product(resource, product):
                return False
    return True


def schedule(
    name: str, pod_spec: Manifest, nodes: Sequence[NodeView], used: Usage | None = None
) -> str | None:
    """The node a pod (or a VMI's launcher pod) lands on: one that its node selector matches,
    whose taints it tolerates and whose GPUs fit what it asks beside what `used` says is placed
    there, picked by its name; None when no node fits. A fleet that declares no nodes at all
    takes anything ("simulated-node")."""
    if not nodes:
        return "simulated-node"
    requests = _requests(pod_spec)
    fitting = sorted(
        (node for node in nodes if not _why_not(node, pod_spec, requests, used or {})),
        key=lambda node: node.name,
    )
    if not fitting:
        return None
    return fitting[int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(fitting)].name


def _why_not(node: NodeView, pod_spec: Manifest, requests: Manifest, used: Usage) -> str:
    """The scheduler's reason a node does not take the pod ("" when it does)."""
    selector = pod_spec.get("nodeSelector") or {}
    tolerations = pod_spec.get("tolerations") or []
    if node.unschedulable:
        return "node(s) were unschedulable"
    if not all(node.labels.get(k) == v for k, v in selector.items()):
        return "node(s) didn't match Pod's node affinity/selector"
    for taint in node.taints:
        if not _tolerated(taint, tolerations):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value')}}}"
    if not _fits_resources(node, requests, pod_spec, used):
        gpu = next((r for r in requests if r.startswith("nvidia.com/")), "nvidia.com/gpu")
        return f"Insufficient {gpu}"
    return ""


def unschedulable_status(
    pod_spec: Manifest, nodes: Sequence[NodeView], since: str, used: Usage | None = None
) -> Manifest:
    """The scheduler's verdict on a pod no node takes, in its words."""
    requests = _requests(pod_spec)
    counts: dict[str, int] = {}
    for node in nodes:
        reason = _why_not(node, pod_spec, requests, used or {})
        if reason:
            counts[reason] = counts.get(reason, 0) + 1
    reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(counts.items()))
    total = len(nodes)
    message = (
        f"0/{total} nodes are available: {reasons}. preemption: 0/{total} nodes are "
        f"available: {total} No preemption victims found for incoming pod."
    )
    return {
        "phase": "Pending",
        "qosClass": "Guaranteed",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": message, "lastProbeTime": None, "lastTransitionTime": since}
        ],
    }
