"""What the simulated API server does to the objects it keeps, beside storing them: merge
patches, and which pods the scheduler left waiting."""

from __future__ import annotations

import copy
from typing import Any

from core.fleet.base import Manifest

from .simulated_operators import PLACED_LATE

# Set on a pod placed once room freed up: its owner waits for it to run.
PLACED_LATE_ANNOTATION = PLACED_LATE


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


def waiting_for_a_node(body: Manifest) -> bool:
    """A pod the scheduler left Pending (a VM's launcher pod among them)."""
    if body.get("kind") != "Pod":
        return False
    return not (body.get("spec") or {}).get("nodeName") and any(
        c.get("reason") == "Unschedulable"
        for c in (body.get("status") or {}).get("conditions") or []
    )
