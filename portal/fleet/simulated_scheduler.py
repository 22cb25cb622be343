"""The simulated fleet's scheduler: where a pod an operator makes (or a VM's launcher pod) lands.

Pure: a node its selector matches, whose taints it tolerates and whose GPUs fit what it asks (as
GPU Feature Discovery labels them), picked by the pod's name; or the scheduler's verdict, in its
words, when none does. It does not count what is already running there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Manifest = dict[str, Any]


@dataclass(frozen=True)
class NodeView:
    """What the scheduler looks at on a node."""

    name: str
    labels: dict[str, str]
    taints: tuple[Manifest, ...] = ()
    unschedulable: bool = False


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


def _names_product(device: str, product: str) -> bool:
    """A passthrough device's resource is the GPU's PCI database name (`GA100_A100_SXM4_80GB`):
    it names the product GPU Feature Discovery labels (`NVIDIA-A100-SXM4-80GB`) when it holds
    the product's model and its memory size."""
    words = {w.upper() for w in device.removeprefix("nvidia.com/").split("_")}
    wanted = [w.upper() for w in product.removeprefix("NVIDIA-").split("-") if w]
    return bool(wanted) and wanted[0] in words and all(
        w in words for w in wanted if w.endswith("GB")
    )


def _fits_resources(node: NodeView, requests: Manifest) -> bool:
    """GPU resources as GPU Feature Discovery labels them: a MIG profile where the node has
    instances of it; whole GPUs, or a GPU passed through to a VM (by its PCI name), where the
    node is not partitioned (and is of that model)."""
    partitioned = any(k.startswith("nvidia.com/mig-") for k in node.labels)
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


def schedule(name: str, pod_spec: Manifest, nodes: Sequence[NodeView]) -> str | None:
    """The node a pod (or a VMI's launcher pod) lands on: one that its node selector matches,
    whose taints it tolerates and whose GPUs fit what it asks, picked by its name; None when no
    node fits. A fleet that declares no nodes at all takes anything ("simulated-node")."""
    if not nodes:
        return "simulated-node"
    requests = _requests(pod_spec)
    fitting = sorted(
        (node for node in nodes if not _why_not(node, pod_spec, requests)),
        key=lambda node: node.name,
    )
    if not fitting:
        return None
    return fitting[int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(fitting)].name


def _why_not(node: NodeView, pod_spec: Manifest, requests: Manifest) -> str:
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
    if not _fits_resources(node, requests):
        gpu = next((r for r in requests if r.startswith("nvidia.com/")), "nvidia.com/gpu")
        return f"Insufficient {gpu}"
    return ""


def unschedulable_status(pod_spec: Manifest, nodes: Sequence[NodeView], since: str) -> Manifest:
    """The scheduler's verdict on a pod no node takes, in its words."""
    requests = _requests(pod_spec)
    counts: dict[str, int] = {}
    for node in nodes:
        reason = _why_not(node, pod_spec, requests)
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
