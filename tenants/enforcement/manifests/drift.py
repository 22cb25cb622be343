"""Comparing what the cluster holds with what the portal last applied (drift).

Drift is measured against the manifests of the last successful apply, never against a newer
desired state: a grant the portal has not applied yet is a change to make, not a correction.
"""

from __future__ import annotations

from typing import Any

from kubernetes.utils.quantity import parse_quantity

from .spec import Manifest

MISSING = "<missing>"


def differs(desired: Any, live: Any) -> bool:
    """True if `live` lacks something `desired` sets (server defaults in `live` are fine)."""
    return bool(_differences(desired, live, ""))


def _differences(desired: Any, live: Any, path: str) -> dict[str, dict[str, Any]]:
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return {path: {"applied": desired, "found": live}}
        found: dict[str, dict[str, Any]] = {}
        for key, value in desired.items():
            found |= _differences(value, live.get(key), f"{path}.{key}" if path else key)
        return found
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return {path: {"applied": desired, "found": live}}
        found = {}
        for i, (d, lv) in enumerate(zip(desired, live, strict=True)):
            found |= _differences(d, lv, f"{path}[{i}]")
        return found
    if _same_scalar(desired, live):
        return {}
    return {path: {"applied": desired, "found": live}}


def _same_scalar(desired: Any, live: Any) -> bool:
    if desired == live or (live is not None and str(desired) == str(live)):
        return True
    # An API server canonicalises quantities ("2048Gi" comes back as "2Ti").
    try:
        return parse_quantity(desired) == parse_quantity(live)
    except (ValueError, TypeError, ArithmeticError):
        return False


def drifted_paths(applied: Manifest, live: Manifest | None) -> dict[str, dict[str, Any]]:
    """Each field path of `applied` the live object no longer holds → {"applied", "found"}.

    {"<missing>": …} when the object is gone; server-set fields and defaults are not drift.
    """
    if live is None:
        return {MISSING: {"applied": "present", "found": None}}
    found: dict[str, dict[str, Any]] = {}
    for key, value in applied.items():
        if key not in {"apiVersion", "kind", "metadata", "status"}:
            found |= _differences(value, live.get(key), key)
    labels = applied.get("metadata", {}).get("labels") or {}
    live_labels = (live.get("metadata") or {}).get("labels") or {}
    found |= _differences(labels, live_labels, "metadata.labels")
    return found


def drifted_fields(desired: Manifest, live: Manifest | None) -> list[str]:
    """The top-level sections (and labels) of `desired` that the live object no longer matches."""
    if live is None:
        return [MISSING]
    fields = [
        key
        for key, value in desired.items()
        if key not in {"apiVersion", "kind", "metadata", "status"} and differs(value, live.get(key))
    ]
    labels = desired.get("metadata", {}).get("labels") or {}
    if differs(labels, (live.get("metadata") or {}).get("labels") or {}):
        fields.append("metadata.labels")
    return fields
