"""What the objects Kubernetes itself runs (StatefulSets, Deployments, Pods) and operators'
custom resources say of their health, read the same way for every kind that has them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import Manifest

# Why a condition means the cluster gave up (types the operator or Kubernetes use).
FAILURE_TYPES = frozenset({"Failed", "Failure", "Error", "ReplicaFailure"})
BAD_WAITING = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "InvalidImageName",
        "CreateContainerError",
    }
)


def ready_replicas(obj: Manifest | None) -> int:
    value = ((obj or {}).get("status") or {}).get("readyReplicas") or 0
    return value if isinstance(value, int) else 0


def failure_of(obj: Manifest | None) -> tuple[str, str] | None:
    """(reason, message) when a CR, a Deployment or a Pod says it cannot go on."""
    status = (obj or {}).get("status") or {}
    for cond in status.get("conditions") or []:
        if not isinstance(cond, Mapping):
            continue
        kind, state = cond.get("type"), cond.get("status")
        reason, message = str(cond.get("reason") or kind), str(cond.get("message") or "")
        if kind in FAILURE_TYPES and state == "True":
            return reason, message
        if kind == "Progressing" and state == "False" and reason == "ProgressDeadlineExceeded":
            return reason, message
        if kind == "PodScheduled" and state == "False" and reason == "Unschedulable":
            return reason, message
    for container in status.get("containerStatuses") or []:
        waiting = ((container or {}).get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in BAD_WAITING:
            return str(waiting["reason"]), str(waiting.get("message") or "")
    return None


def newest_first(objects: list[Manifest | None]) -> tuple[dict[str, Any], ...]:
    conditions = [
        c
        for obj in objects
        for c in ((obj or {}).get("status") or {}).get("conditions") or []
        if isinstance(c, Mapping)
    ]
    return tuple(
        sorted(conditions, key=lambda c: str(c.get("lastTransitionTime") or ""), reverse=True)
    )
