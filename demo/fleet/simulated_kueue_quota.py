"""Kueue v0.19's quota tree for the simulated fleet: ClusterQueues in Cohorts, Cohorts under
parent Cohorts (`spec.parentName`), and what each may use, lend and borrow. Pure.

As Kueue's cache computes it (its hierarchical cohorts): a node's subtree quota is its own
nominal quota plus what each child lends it (the child's subtree quota less what the child's
`lendingLimit` keeps, its guaranteed quota); a Cohort's usage is what its children use beyond
their guaranteed quota. What a ClusterQueue may still take is what it has not used of its
guaranteed quota plus what its parent has available, within its `borrowingLimit` (the parent's,
from its own parent, alike); at the root, its subtree quota less its usage. A cohort a queue
names but no Cohort object defines is a root without quota or limits (a flat cohort).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity

Manifest = dict[str, Any]
FlavorResource = tuple[str, str]  # (flavor, resource)
Node = tuple[str, str]  # ("queue" | "cohort", name)
NONE = Decimal(0)


def parse(value: Any) -> Decimal:
    """A quantity's value (0 when it is none)."""
    try:
        return parse_quantity(str(value))
    except (ValueError, TypeError, ArithmeticError):
        return Decimal(0)


@dataclass(frozen=True)
class Cell:
    """One flavor's quota of one resource in a ClusterQueue or a Cohort."""

    nominal: Decimal
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


def _resource_groups(spec: Manifest) -> tuple[list, dict[FlavorResource, Cell]]:
    groups, cells = [], {}
    for group in spec.get("resourceGroups") or []:
        names = []
        for flavor in group.get("flavors") or []:
            names.append(flavor["name"])
            for cell in flavor.get("resources") or []:
                limits = {
                    key: parse(cell[key]) if cell.get(key) is not None else None
                    for key in ("borrowingLimit", "lendingLimit")
                }
                cells[(flavor["name"], cell["name"])] = Cell(
                    parse(cell.get("nominalQuota") or 0),
                    limits["borrowingLimit"],
                    limits["lendingLimit"],
                )
        groups.append((tuple(group.get("coveredResources") or ()), tuple(names)))
    return groups, cells


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    cohort: str
    groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]  # (covered, flavors) each
    cells: Mapping[FlavorResource, Cell]
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    held: bool = False  # stopPolicy Hold: admits nothing new


def cluster_queue(manifest: Manifest) -> ClusterQueue:
    spec = manifest.get("spec") or {}
    groups, cells = _resource_groups(spec)
    preemption = spec.get("preemption") or {}
    return ClusterQueue(
        name=(manifest.get("metadata") or {})["name"],
        cohort=spec.get("cohortName") or "",
        groups=tuple(groups),
        cells=cells,
        within_cluster_queue=preemption.get("withinClusterQueue") or "Never",
        reclaim_within_cohort=preemption.get("reclaimWithinCohort") or "Never",
        held=spec.get("stopPolicy") in ("Hold", "HoldAndDrain"),
    )


@dataclass(frozen=True)
class Cohort:
    name: str
    parent: str = ""
    cells: Mapping[FlavorResource, Cell] = field(default_factory=dict)


def cohort(manifest: Manifest) -> Cohort:
    spec = manifest.get("spec") or {}
    return Cohort(
        (manifest.get("metadata") or {})["name"],
        spec.get("parentName") or "",
        _resource_groups(spec)[1],
    )


class Usage:
    """What admitted workloads reserve, per ClusterQueue, flavor and resource, and what that
    leaves each queue in its cohort tree."""

    def __init__(
        self,
        queues: Mapping[str, ClusterQueue],
        entries: Iterable[Any],
        cohorts: Mapping[str, Cohort] | None = None,
    ):
        self.queues = queues
        self.cohorts = dict(cohorts or {})
        for queue in queues.values():  # a cohort no object defines: a root of its own
            if queue.cohort:
                self.cohorts.setdefault(queue.cohort, Cohort(queue.cohort))
        for found in list(self.cohorts.values()):
            if found.parent:
                self.cohorts.setdefault(found.parent, Cohort(found.parent))
        self.children: dict[str, list[Node]] = {}
        for found in self.cohorts.values():
            if found.parent and found.parent != found.name:
                self.children.setdefault(found.parent, []).append(("cohort", found.name))
        for queue in queues.values():
            if queue.cohort:
                self.children.setdefault(queue.cohort, []).append(("queue", queue.name))
        self.used: dict[tuple[str, str, str], Decimal] = {}
        for entry in entries:
            if entry.holds and entry.cluster_queue in queues:
                self.add(entry, 1)

    def add(self, entry: Any, sign: int) -> None:
        for resource, flavor_name in (entry.admitted or {}).items():
            key = (entry.cluster_queue or "", flavor_name, resource)
            amount = entry.requests.get(resource, Decimal(0))
            self.used[key] = self.used.get(key, Decimal(0)) + sign * amount

    def of(self, queue: str, fr: FlavorResource) -> Decimal:
        return self.used.get((queue, *fr), Decimal(0))

    # --- the tree -------------------------------------------------------------------------

    def _cell(self, node: Node, fr: FlavorResource) -> Cell:
        kind, name = node
        found = self.queues[name] if kind == "queue" else self.cohorts[name]
        return found.cells.get(fr, Cell(NONE))

    def parent(self, node: Node) -> Node | None:
        kind, name = node
        above = self.queues[name].cohort if kind == "queue" else self.cohorts[name].parent
        return ("cohort", above) if above and above != name else None

    def path(self, queue: ClusterQueue) -> list[Node]:
        """The queue, then its cohort, then each parent up to the root."""
        found: list[Node] = [("queue", queue.name)]
        while (above := self.parent(found[-1])) is not None and above not in found:
            found.append(above)
        return found

    def quota(self, node: Node, fr: FlavorResource) -> Decimal:
        """Its subtree quota: its own nominal and what its children lend it."""
        total = self._cell(node, fr).nominal
        for child in self.children.get(node[1], []) if node[0] == "cohort" else []:
            total += self.quota(child, fr) - self.guaranteed(child, fr)
        return total

    def guaranteed(self, node: Node, fr: FlavorResource) -> Decimal:
        """What stays its own: never lent to its parent."""
        limit = self._cell(node, fr).lending_limit
        return NONE if limit is None else max(NONE, self.quota(node, fr) - limit)

    def usage(self, node: Node, fr: FlavorResource) -> Decimal:
        """A queue's usage; a cohort's: what its children use beyond their guaranteed quota."""
        if node[0] == "queue":
            return self.of(node[1], fr)
        return sum(
            (
                max(NONE, self.usage(child, fr) - self.guaranteed(child, fr))
                for child in self.children.get(node[1], [])
            ),
            NONE,
        )

    def _available(self, node: Node, fr: FlavorResource) -> Decimal:
        above = self.parent(node)
        quota, used = self.quota(node, fr), self.usage(node, fr)
        if above is None:
            return quota - used
        guaranteed = self.guaranteed(node, fr)
        from_parent = self._available(above, fr)
        limit = self._cell(node, fr).borrowing_limit
        if limit is not None:
            stored = quota - guaranteed
            from_parent = min(from_parent, stored - max(NONE, used - guaranteed) + limit)
        return max(NONE, guaranteed - used) + from_parent

    def available(self, queue: ClusterQueue, fr: FlavorResource) -> Decimal:
        """What `queue` may still take of `fr`: its nominal quota left; in a cohort, what it
        has not lent of its own plus what the tree lends it, within the borrowing limits."""
        if fr not in queue.cells:
            return NONE
        return self._available(("queue", queue.name), fr)

    def borrowed(self, queue: ClusterQueue, fr: FlavorResource) -> Decimal:
        """What `queue` holds of `fr` beyond its nominal quota: only a cohort lends that."""
        if not queue.cohort:
            return NONE
        return max(NONE, self.of(queue.name, fr) - self._cell(("queue", queue.name), fr).nominal)
