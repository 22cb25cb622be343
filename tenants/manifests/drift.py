"""Comparing what the cluster holds with what the portal wants (drift)."""

from __future__ import annotations

from typing import Any

from kubernetes.utils.quantity import parse_quantity

from .spec import Manifest


def differs(desired: Any, live: Any) -> bool:
    """True if `live` lacks something `desired` sets (server defaults in `live` are fine)."""
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return True
        return any(differs(value, live.get(key)) for key, value in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return True
        return any(differs(d, lv) for d, lv in zip(desired, live, strict=True))
    return not _same_scalar(desired, live)


def _same_scalar(desired: Any, live: Any) -> bool:
    if desired == live or (live is not None and str(desired) == str(live)):
        return True
    # An API server canonicalises quantities ("2048Gi" comes back as "2Ti").
    try:
        return parse_quantity(desired) == parse_quantity(live)
    except (ValueError, TypeError, ArithmeticError):
        return False


def drifted_fields(desired: Manifest, live: Manifest | None) -> list[str]:
    """The top-level sections (and labels) of `desired` that the live object no longer matches."""
    if live is None:
        return ["<missing>"]
    fields = [
        key
        for key, value in desired.items()
        if key not in {"apiVersion", "kind", "metadata", "status"} and differs(value, live.get(key))
    ]
    labels = desired.get("metadata", {}).get("labels") or {}
    if differs(labels, (live.get("metadata") or {}).get("labels") or {}):
        fields.append("metadata.labels")
    return fields
