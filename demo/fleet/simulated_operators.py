"""What the cluster's controllers make of the objects they own, for the simulated fleet: the
vocabulary the per-project modules (`simulated_flux`, `simulated_kubevirt`, `simulated_slinky`)
plan in, and who depends on whom.

A planner is pure: it gets an object, its `Clock` and the objects already made for it (as read
back) and says which objects its controller has made by now, and when it would have made each.
The gateway creates what is missing (dated as the planner says), keeps the ones marked in step
with their owner, and deletes the owner's dependents of the pruned kinds it no longer makes (a
stopped VM's VMI, the workers a scale-down removes).

Who depends on whom is what the garbage collector and Helm go by (`depends_on`): an
ownerReference to the owner's uid, or Helm's release annotations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .simulated_clock import Clock, parse_iso

Manifest = dict[str, Any]
Key = tuple[str, str, str]  # apiVersion, kind, name (in the owner's namespace)
HELM_RELEASE_NAME = "meta.helm.sh/release-name"
# Set on a pod placed once Kueue admitted it or room freed up: its owner waits for it to run.
PLACED_LATE = "simulated.portal/placed-late"
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"


@dataclass(frozen=True)
class Made:
    """An object a controller makes, and when it would have made it. `in_step`: the
    controller keeps its spec as the owner says (a StatefulSet from its chart); otherwise it is
    created once and left alone (a VMI, a key Secret)."""

    manifest: Manifest
    at: datetime
    in_step: bool = False

    @property
    def key(self) -> Key:
        return key_of(self.manifest)


@dataclass(frozen=True)
class Plan:
    made: tuple[Made, ...] = ()
    # Kinds among the owner's dependents its controller deletes when they are not in `made`.
    prune: frozenset[tuple[str, str]] = field(default_factory=frozenset)


Planner = Callable[[Manifest, Clock, Sequence[Manifest]], Plan]


@dataclass(frozen=True)
class Operator:
    """One kind's controller: the kinds it makes, and what it has made by now."""

    makes: tuple[tuple[str, str], ...]
    plan: Planner
    # Which of the kind's objects it plays (None: all); the others are not read for dependents.
    plays: Callable[[Manifest], bool] | None = None

    def owns(self, obj: Manifest) -> bool:
        return self.plays is None or self.plays(obj)


def key_of(obj: Manifest) -> Key:
    return (obj.get("apiVersion", ""), obj.get("kind", ""), (obj.get("metadata") or {})["name"])


def meta_of(obj: Manifest) -> Manifest:
    return obj.get("metadata") or {}


def name_and_namespace(obj: Manifest) -> tuple[str, str]:
    meta = meta_of(obj)
    return meta.get("name", ""), meta.get("namespace", "default")


def owner_reference(owner: Manifest, *, controller: bool = True) -> Manifest:
    meta = meta_of(owner)
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def depends_on(obj: Manifest, owner: Manifest) -> bool:
    """`obj` goes when `owner` goes: it names the owner's uid in its ownerReferences, or it is
    an object of the Helm release `owner` installed."""
    meta, owner_meta = meta_of(obj), meta_of(owner)
    uid = owner_meta.get("uid")
    if uid and any(ref.get("uid") == uid for ref in meta.get("ownerReferences") or []):
        return True
    annotations = meta.get("annotations") or {}
    release = ((owner.get("spec") or {}).get("releaseName")) or owner_meta.get("name")
    return (
        owner.get("kind") == "HelmRelease"
        and annotations.get(HELM_RELEASE_NAME) == release
        and annotations.get(HELM_RELEASE_NAMESPACE) == owner_meta.get("namespace")
    )


def dependents(owner: Manifest, candidates: Sequence[Manifest]) -> list[Manifest]:
    """The objects among `candidates` that depend on `owner`, directly or through another."""
    found: list[Manifest] = []
    frontier = [owner]
    remaining = [c for c in candidates if meta_of(c).get("uid") != meta_of(owner).get("uid")]
    while frontier:
        parent = frontier.pop()
        hits = [c for c in remaining if depends_on(c, parent)]
        remaining = [c for c in remaining if not any(c is h for h in hits)]
        found += hits
        frontier += hits
    return found


def by_kind(children: Sequence[Manifest], kind: str) -> dict[str, Manifest]:
    return {meta_of(c)["name"]: c for c in children if c.get("kind") == kind}


def ready_since(obj: Manifest | None) -> datetime | None:
    """When the object's Ready condition turned True (None while it is not)."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            return parse_iso(cond.get("lastTransitionTime"))
    return None
