"""Kueue v0.19's scheduler for the simulated fleet: admission by quota per flavor, borrowing in
a cohort, preemption. Pure: given the ClusterQueues, the ResourceFlavors and the workloads (as
`Entry`s), one round decides who is admitted into which flavor, who waits and why (in Kueue's
words), and who is preempted for whom.

Pending workloads are taken in priority order, then by creation (BestEffortFIFO): a workload is
admitted into the first flavor of its ClusterQueue that matches its node selector, tolerates the
flavor's taints (the flavor's own tolerations count: Kueue adds them to the pods it admits) and
has room, within the nominal quota or, in a cohort tree, borrowing what the others leave unused
within the borrowing and lending limits of the queues and Cohorts on the way
(`simulated_kueue_quota`). One that does not fit may preempt: workloads of lower priority in
its own ClusterQueue (withinClusterQueue: LowerPriority), or (reclaimWithinCohort: Any) those
of another queue of its tree that borrows, when it fits within the quota of its own side of the
tree (its queue's nominal quota, or its Cohort's below the cohort both share): other queues'
first, lower priorities first, the most recent first, as Kueue orders its candidates; never a
queue below its nominal quota, nor from a Cohort within its own quota (an inference endpoint's
queue holds its minimum replicas as nominal quota: they are never reclaimed). A pod bound
without admission (the demo data plays kubelet for it) runs, so it holds the flavor its node
carries. Not played: borrowWithinCohort (a borrower displacing another), fair sharing,
admission checks, topology, pod groups, partial admission.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .simulated_kueue_quota import (  # noqa: F401 (its readers find the queues here too)
    Cell,
    ClusterQueue,
    Cohort,
    FlavorResource,
    Node,
    Usage,
    cluster_queue,
    cohort,
    parse,
)

Manifest = dict[str, Any]
POD_SET = "main"
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"


def quantity(value: Decimal) -> str:
    """A quantity as Kubernetes prints it (whole, or in thousandths)."""
    return str(int(value)) if value == value.to_integral_value() else f"{int(value * 1000)}m"


# --- the scheduler's view: flavors, workloads -------------------------------------------------


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Manifest, ...] = ()
    # Added to the pods Kueue admits into the flavor (so they tolerate its nodes' taints).
    tolerations: tuple[Manifest, ...] = ()


def flavor(manifest: Manifest) -> Flavor:
    spec = manifest.get("spec") or {}
    return Flavor((manifest.get("metadata") or {})["name"], dict(spec.get("nodeLabels") or {}),
                  tuple(spec.get("nodeTaints") or ()), tuple(spec.get("tolerations") or ()))


@dataclass
class Entry:
    """A Workload as Kueue's scheduler sees it."""

    namespace: str
    name: str
    uid: str
    job_uid: str
    local_queue: str
    cluster_queue: str | None  # None: its LocalQueue does not exist
    priority: int
    created: str
    requests: dict[str, Decimal]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[Manifest] = ()
    admitted: dict[str, str] | None = None  # resource → flavor, while it holds quota
    finished: bool = False
    # A pod bound without Kueue's admission (the demo data plays kubelet for it): its node's
    # labels. It runs, so it was admitted: it holds the flavor its node carries.
    running_on: Mapping[str, str] | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def holds(self) -> bool:
        return self.admitted is not None and not self.finished


@dataclass
class Verdict:
    """What this round of Kueue decided for a workload (those it left as they were have none)."""

    admitted: dict[str, str] | None = None
    pending: str = ""
    preempted_by: Entry | None = None
    reason: str = ""


def _tolerated(taint: Manifest, tolerations: Sequence[Manifest]) -> bool:
    for toleration in tolerations:
        if toleration.get("key") not in (None, "", taint.get("key")):
            continue
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        if toleration.get("operator") == "Exists" or toleration.get("value") == taint.get("value"):
            return True
    return False


def _flavor_refusal(entry: Entry, found: Flavor) -> str:
    """Why a flavor cannot take the workload whatever its quota ("" when it can)."""
    if any(k in entry.node_selector and entry.node_selector[k] != v
           for k, v in found.node_labels.items()):
        return f"flavor {found.name} doesn't match node affinity"
    for taint in found.node_taints:  # the flavor's own tolerations count (Kueue adds them)
        if not _tolerated(taint, [*entry.tolerations, *found.tolerations]):
            return (f"untolerated taint {{{taint.get('key')} {taint.get('value')} "
                    f"{taint.get('effect')}}} in flavor {found.name}")
    return ""


def _beyond_capacity(
    entry: Entry, queue: ClusterQueue, flavor_name: str, wanted: Mapping[str, Decimal]
) -> list[str]:
    """Kueue's words for what the flavor could never hold, however idle: asks beyond a
    queue's nominal quota when it is in no cohort (nothing to borrow; a cohort's capacity is
    not played)."""
    if queue.cohort:
        return []
    found = []
    for resource, asked in sorted(wanted.items()):
        nominal = queue.cells.get((flavor_name, resource), Cell(Decimal(0))).nominal
        if asked > nominal:
            found.append(
                f"insufficient quota for {resource} in flavor {flavor_name}, previously "
                f"considered podsets requests (0) + current podset request ({quantity(asked)}) "
                f"> maximum capacity ({quantity(nominal)})")
    return found


def assign(
    entry: Entry, queue: ClusterQueue, flavors: Mapping[str, Flavor], usage: Usage
) -> tuple[dict[str, str] | None, list[str], set[FlavorResource]]:
    """The flavors the workload gets per resource (the first of each resource group that has
    room), or None, Kueue's reasons why not, and the flavors' resources that lack room."""
    assignment: dict[str, str] = {}
    reasons: list[str] = []
    short_of: set[FlavorResource] = set()
    covered = {r for names, _ in queue.groups for r in names}
    for resource in sorted(set(entry.requests) - covered):
        reasons.append(f"resource {resource} unavailable in ClusterQueue")
    for names, flavor_names in queue.groups:
        wanted = {r: q for r, q in entry.requests.items() if r in names}
        if not wanted:
            continue
        chosen = None
        for name in flavor_names:
            refusal = _flavor_refusal(entry, flavors.get(name, Flavor(name)))
            if refusal:
                reasons.append(refusal)
                continue
            beyond = _beyond_capacity(entry, queue, name, wanted)
            if beyond:
                reasons += beyond  # waiting or preempting never makes room: not short of it
                continue
            short = [
                (r, q - usage.available(queue, (name, r)))
                for r, q in sorted(wanted.items())
                if usage.available(queue, (name, r)) < q
            ]
            if not short:
                chosen = name
                break
            reasons += [f"insufficient unused quota for {r} in flavor {name}, "
                        f"{quantity(n)} more needed" for r, n in short]
            short_of |= {(name, r) for r, _ in short}
        if chosen is None:
            return None, reasons, short_of
        assignment |= dict.fromkeys(wanted, chosen)
    if set(entry.requests) - covered:
        return None, reasons, short_of
    return assignment, [], set()


def pending_message(reasons: Sequence[str]) -> str:
    return f"couldn't assign flavors to pod set {POD_SET}: {', '.join(reasons)}"


def _running_assignment(
    entry: Entry, queue: ClusterQueue, flavors: Mapping[str, Flavor]
) -> dict[str, str]:
    """The flavor a pod bound without admission holds: per group, the first flavor whose node
    labels its node carries."""
    assignment: dict[str, str] = {}
    for names, flavor_names in queue.groups:
        wanted = [r for r in entry.requests if r in names]
        for name in flavor_names if wanted else ():
            labels = flavors.get(name, Flavor(name)).node_labels
            if all((entry.running_on or {}).get(k) == v for k, v in labels.items()):
                assignment |= dict.fromkeys(wanted, name)
                break
    return assignment


def queue_order(entries: Iterable[Entry]) -> list[Entry]:
    """Kueue's order: higher priority first, then the older (BestEffortFIFO)."""
    return sorted(entries, key=lambda e: (-e.priority, e.created, e.namespace, e.name))


def _below(usage: Usage, queue: ClusterQueue, other: ClusterQueue) -> tuple[list[Node], list[Node]]:
    """The paths of `queue` and `other` below the cohort they share (both empty: none)."""
    mine, theirs = usage.path(queue), usage.path(other)
    shared = next((node for node in mine if node[0] == "cohort" and node in theirs), None)
    if shared is None:
        return [], []
    return mine[:mine.index(shared)], theirs[:theirs.index(shared)]


def _fits_within(entry: Entry, queue: ClusterQueue, flavors: Mapping[str, Flavor],
                 usage: Usage, node: Node) -> bool:
    """Whether the workload fits the quota of `node` (its queue, or a Cohort above it) in some
    flavor of each group it asks of: what the rest of the tree must give back."""
    for names, flavor_names in queue.groups:
        wanted = {r: q for r, q in entry.requests.items() if r in names}
        if wanted and not any(
            not _flavor_refusal(entry, flavors.get(f, Flavor(f)))
            and all(usage.usage(node, (f, r)) + q <= usage.quota(node, (f, r))
                    for r, q in wanted.items())
            for f in flavor_names
        ):
            return False
    return True


def _reclaimable(usage: Usage, other: Entry, side: list[Node]) -> bool:
    """Whether taking `other` back takes only borrowed quota: its queue, and each Cohort of its
    side of the tree, holds beyond its own quota of something `other` holds."""
    held = [(f, r) for r, f in (other.admitted or {}).items()]
    return bool(side) and all(
        any(usage.usage(node, fr) > usage.quota(node, fr) for fr in held) for node in side)


def _victims(
    entry: Entry,
    queue: ClusterQueue,
    queues: Mapping[str, ClusterQueue],
    flavors: Mapping[str, Flavor],
    usage: Usage,
    holding: Sequence[Entry],
    short_of: set[FlavorResource],
) -> list[tuple[Entry, str]] | None:
    """The workloads to evict so that `entry` fits, and why each (None: no set does): only
    those holding what it lacks room for."""
    candidates: list[tuple[Entry, str, list[Node]]] = []
    for other in holding:
        if other is entry or other.cluster_queue not in queues:
            continue
        if not {(f, r) for r, f in (other.admitted or {}).items()} & short_of:
            continue
        if other.cluster_queue == queue.name:
            if queue.within_cluster_queue == "LowerPriority" and other.priority < entry.priority:
                candidates.append((other, IN_CLUSTER_QUEUE, []))
            continue
        mine, theirs = _below(usage, queue, queues[other.cluster_queue or ""])
        if (queue.reclaim_within_cohort == "Any" and mine
                and _fits_within(entry, queue, flavors, usage, mine[-1])):
            candidates.append((other, IN_COHORT_RECLAMATION, theirs))
    # Kueue's candidate order: other queues' first, then lower priority, then the newest.
    candidates.sort(key=lambda c: (c[1] == IN_CLUSTER_QUEUE, c[0].priority,
                                   _descending(c[0].created), _descending(c[0].name)))
    chosen: list[tuple[Entry, str]] = []
    for other, reason, theirs in candidates:
        if reason == IN_COHORT_RECLAMATION and not _reclaimable(usage, other, theirs):
            continue  # reclaim takes back only what is borrowed: never below a nominal quota
        usage.add(other, -1)
        chosen.append((other, reason))
        if assign(entry, queue, flavors, usage)[0] is not None:
            return _fill_back(entry, queue, flavors, usage, chosen)
    for other, _ in chosen:  # no set of victims makes room: nobody is evicted
        usage.add(other, 1)
    return None


def _fill_back(entry: Entry, queue: ClusterQueue, flavors: Mapping[str, Flavor], usage: Usage,
               chosen: list[tuple[Entry, str]]) -> list[tuple[Entry, str]]:
    """Kueue's minimal set: the victims but the last, in reverse, each spared if the workload
    still fits with it back."""
    kept = list(chosen)
    for victim in reversed(chosen[:-1]):
        usage.add(victim[0], 1)
        if assign(entry, queue, flavors, usage)[0] is not None:
            kept.remove(victim)
        else:
            usage.add(victim[0], -1)
    return kept


def _descending(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


def schedule(
    queues: Mapping[str, ClusterQueue], flavors: Mapping[str, Flavor], entries: Sequence[Entry],
    cohorts: Mapping[str, Cohort] | None = None,
) -> dict[tuple[str, str], Verdict]:
    """One round of Kueue's scheduler over every workload: who is admitted, who waits and why,
    who is preempted for whom (`cohorts`: the Cohort objects, by name). Entries are updated in
    place (`admitted`)."""
    verdicts: dict[tuple[str, str], Verdict] = {}
    for entry in entries:
        queue = queues.get(entry.cluster_queue or "")
        if entry.admitted is None and entry.running_on is not None and queue and not entry.finished:
            entry.admitted = _running_assignment(entry, queue, flavors)
            verdicts[entry.key] = Verdict(admitted=entry.admitted)
    usage = Usage(queues, entries, cohorts)
    for entry in queue_order(e for e in entries if e.admitted is None and not e.finished):
        queue = queues.get(entry.cluster_queue or "")
        if entry.cluster_queue is None:
            verdicts[entry.key] = Verdict(pending=f"LocalQueue {entry.local_queue} doesn't exist")
            continue
        if queue is None:
            verdicts[entry.key] = Verdict(
                pending=f"ClusterQueue {entry.cluster_queue} doesn't exist")
            continue
        if queue.held:
            verdicts[entry.key] = Verdict(pending=f"ClusterQueue {queue.name} is inactive")
            continue
        assignment, reasons, short_of = assign(entry, queue, flavors, usage)
        if assignment is None:
            holding = [e for e in entries if e.holds]
            victims = _victims(entry, queue, queues, flavors, usage, holding, short_of)
            if victims is None:
                verdicts[entry.key] = Verdict(pending=pending_message(reasons))
                continue
            for victim, reason in victims:
                victim.admitted = None
                verdicts[victim.key] = Verdict(preempted_by=entry, reason=reason)
            assignment = assign(entry, queue, flavors, usage)[0]
        entry.admitted = assignment
        usage.add(entry, 1)
        verdicts[entry.key] = Verdict(admitted=assignment)
    return verdicts


def positions(entries: Iterable[Entry]) -> list[tuple[Entry, int, int]]:
    """The pending workloads in queue order, with their position in their ClusterQueue and in
    their LocalQueue (from 0), as the visibility API reports them."""
    in_cluster_queue: dict[str | None, int] = {}
    in_local_queue: dict[tuple[str, str], int] = {}
    found = []
    for entry in queue_order(e for e in entries if e.admitted is None and not e.finished):
        cq = in_cluster_queue.get(entry.cluster_queue, 0)
        lq = in_local_queue.get((entry.namespace, entry.local_queue), 0)
        in_cluster_queue[entry.cluster_queue] = cq + 1
        in_local_queue[(entry.namespace, entry.local_queue)] = lq + 1
        found.append((entry, cq, lq))
    return found
