"""What the simulated API server does to the objects it keeps, beside storing them: merge
patches, and how the scheduler sees a VM's launcher pod and a pod left waiting."""

from __future__ import annotations

import copy
from typing import Any

from core.fleet.base import Manifest

from .simulated_kubevirt import UNSCHEDULABLE

# Set on a pod placed once room freed up: its owner waits for it to run.
PLACED_LATE_ANNOTATION = "simulated.portal/placed-late"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge, None removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def launcher_pod(vmi_spec: Manifest) -> Manifest:
    """A VMI's launcher pod as the scheduler sees it: the VMI's selector and tolerations, and
    a limit per passthrough GPU by its resource name."""
    devices = ((vmi_spec.get("domain") or {}).get("devices") or {}).get("gpus") or []
    asked: dict[str, int] = {}
    for device in devices:
        name = device.get("deviceName", "")
        asked[name] = asked.get(name, 0) + 1
    return {**vmi_spec, "containers": [{"resources": {"limits": asked}}]}


def waiting_for_a_node(body: Manifest) -> bool:
    """A pod the scheduler left Pending, or a VMI whose launcher pod no node took."""
    if body.get("kind") == "Pod":
        return not (body.get("spec") or {}).get("nodeName") and any(
            c.get("reason") == "Unschedulable"
            for c in (body.get("status") or {}).get("conditions") or []
        )
    if body.get("kind") == "VirtualMachineInstance":
        annotations = (body.get("metadata") or {}).get("annotations") or {}
        return UNSCHEDULABLE in annotations
    return False
