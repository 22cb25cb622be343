"""Kueue v0.19's scheduler for the simulated fleet: admission by quota per flavor, borrowing in
a cohort, preemption. Pure: given the ClusterQueues, the ResourceFlavors and the workloads (as
`Entry`s), one round decides who is admitted into which flavor, who waits and why (in Kueue's
words), and who is preempted for whom.

Pending workloads are taken in priority order, then by creation (BestEffortFIFO): a workload is
admitted into the first flavor of its ClusterQueue that matches its node selector, tolerates the
flavor's taints (the flavor's own tolerations count: Kueue adds them to the pods it admits) and
has room, within the nominal quota or, in a cohort, borrowing what the
other members leave unused (up to the queue's borrowingLimit, and only what the lenders'
lendingLimit lets go). One that does not fit may preempt: workloads of lower priority in its
own ClusterQueue (withinClusterQueue: LowerPriority), or, when it fits within its own nominal
quota, workloads of cohort members that borrow (reclaimWithinCohort: Any) — other queues'
first, lower priorities first, the most recent first, as Kueue orders its candidates; never an
inference endpoint's replica below the endpoint's minimum replicas (`Entry.floor`: Kueue does
not know it, the portal's priorities and this rule keep endpoints whole). A pod bound without
admission (the demo data plays kubelet for it) runs, so it holds the flavor its node carries.
Not played: borrowWithinCohort (a borrower displacing another), fair sharing, admission
checks, topology, pod groups, partial admission.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity

Manifest = dict[str, Any]
POD_SET = "main"
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
FlavorResource = tuple[str, str]  # (flavor, resource)


def parse(value: Any) -> Decimal:
    """A quantity's value (0 when it is none)."""
    try:
        return parse_quantity(str(value))
    except (ValueError, TypeError, ArithmeticError):
        return Decimal(0)


def quantity(value: Decimal) -> str:
    """A quantity as Kubernetes prints it (whole, or in thousandths)."""
    return str(int(value)) if value == value.to_integral_value() else f"{int(value * 1000)}m"


# --- the scheduler's view: queues, flavors, workloads ------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One flavor's quota of one resource in a ClusterQueue."""

    nominal: Decimal
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None

    @property
    def lendable(self) -> Decimal:
        """What the cohort may use of it while the queue leaves it idle."""
        if self.lending_limit is None:
            return self.nominal
        return min(self.nominal, self.lending_limit)

    @property
    def guaranteed(self) -> Decimal:
        """What stays the queue's own: never lent."""
        return self.nominal - self.lendable


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
                    limits["borrowingLimit"], limits["lendingLimit"],
                )
        groups.append((tuple(group.get("coveredResources") or ()), tuple(names)))
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
    endpoint: str = ""  # the inference endpoint whose replica it is
    floor: int = 0  # the endpoint's minimum replicas: never preempted below it

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


class Usage:
    """What admitted workloads reserve, per ClusterQueue, flavor and resource."""

    def __init__(self, queues: Mapping[str, ClusterQueue], entries: Iterable[Entry]):
        self.queues = queues
        self.used: dict[tuple[str, str, str], Decimal] = {}
        for entry in entries:
            if entry.holds and entry.cluster_queue in queues:
                self.add(entry, 1)

    def add(self, entry: Entry, sign: int) -> None:
        for resource, flavor_name in (entry.admitted or {}).items():
            key = (entry.cluster_queue or "", flavor_name, resource)
            amount = entry.requests.get(resource, Decimal(0))
            self.used[key] = self.used.get(key, Decimal(0)) + sign * amount

    def of(self, queue: str, fr: FlavorResource) -> Decimal:
        return self.used.get((queue, *fr), Decimal(0))

    def members(self, cohort: str) -> list[ClusterQueue]:
        return [q for q in self.queues.values() if cohort and q.cohort == cohort]

    def available(self, queue: ClusterQueue, fr: FlavorResource) -> Decimal:
        """What `queue` may still take of `fr`: its nominal quota left; in a cohort, what it
        has not lent of its own plus what the cohort's lendable quota leaves unused, up to its
        borrowing limit."""
        cell = queue.cells.get(fr, Cell(Decimal(0), Decimal(0)))
        used = self.of(queue.name, fr)
        if not queue.cohort:
            return cell.nominal - used
        pool = Decimal(0)
        pool_used = Decimal(0)
        for member in self.members(queue.cohort):
            theirs = member.cells.get(fr)
            if theirs is None:
                continue
            pool += theirs.lendable
            pool_used += max(Decimal(0), self.of(member.name, fr) - theirs.guaranteed)
        available = max(Decimal(0), cell.guaranteed - used) + pool - pool_used
        if cell.borrowing_limit is not None:
            available = min(available, cell.nominal + cell.borrowing_limit - used)
        return available

    def borrowed(self, queue: ClusterQueue, fr: FlavorResource) -> Decimal:
        """What `queue` holds of `fr` beyond its nominal quota: only a cohort lends that."""
        if not queue.cohort:
            return Decimal(0)
        cell = queue.cells.get(fr, Cell(Decimal(0)))
        return max(Decimal(0), self.of(queue.name, fr) - cell.nominal)


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
    own_nominal = _fits_own_nominal(entry, queue, flavors, usage)
    candidates: list[tuple[Entry, str]] = []
    for other in holding:
        if other is entry or other.cluster_queue not in queues:
            continue
        if not {(f, r) for r, f in (other.admitted or {}).items()} & short_of:
            continue
        if other.cluster_queue == queue.name:
            if queue.within_cluster_queue == "LowerPriority" and other.priority < entry.priority:
                candidates.append((other, IN_CLUSTER_QUEUE))
        elif (queue.cohort and queues[other.cluster_queue].cohort == queue.cohort
              and queue.reclaim_within_cohort == "Any" and own_nominal):
            candidates.append((other, IN_COHORT_RECLAMATION))
    # Kueue's candidate order: other queues' first, then lower priority, then the newest.
    candidates.sort(key=lambda c: (c[1] == IN_CLUSTER_QUEUE, c[0].priority,
                                   _descending(c[0].created), _descending(c[0].name)))
    replicas: dict[str, int] = {}
    for other in holding:
        if other.endpoint:
            replicas[other.endpoint] = replicas.get(other.endpoint, 0) + 1
    chosen: list[tuple[Entry, str]] = []
    for other, reason in candidates:
        if other.endpoint and replicas[other.endpoint] <= other.floor:
            continue  # never an endpoint below its minimum replicas
        other_queue = queues[other.cluster_queue or ""]
        if reason == IN_COHORT_RECLAMATION and not any(
            usage.borrowed(other_queue, (f, r)) > 0 for r, f in (other.admitted or {}).items()
        ):
            continue  # reclaim takes back only what is borrowed
        usage.add(other, -1)
        chosen.append((other, reason))
        if other.endpoint:
            replicas[other.endpoint] -= 1
        if assign(entry, queue, flavors, usage)[0] is not None:
            return chosen
    for other, _ in chosen:  # no set of victims makes room: nobody is evicted
        usage.add(other, 1)
    return None


def _fits_own_nominal(
    entry: Entry, queue: ClusterQueue, flavors: Mapping[str, Flavor], usage: Usage
) -> bool:
    """Whether the workload fits its queue's own nominal quota (what a cohort must give back)
    in some flavor of each group it asks of."""
    for names, flavor_names in queue.groups:
        wanted = {r: q for r, q in entry.requests.items() if r in names}
        if wanted and not any(
            not _flavor_refusal(entry, flavors.get(f, Flavor(f)))
            and all(usage.of(queue.name, (f, r)) + q
                    <= queue.cells.get((f, r), Cell(Decimal(0))).nominal
                    for r, q in wanted.items())
            for f in flavor_names
        ):
            return False
    return True


def _descending(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


def schedule(
    queues: Mapping[str, ClusterQueue], flavors: Mapping[str, Flavor], entries: Sequence[Entry]
) -> dict[tuple[str, str], Verdict]:
    """One round of Kueue's scheduler over every workload: who is admitted, who waits and why,
    who is preempted for whom. Entries are updated in place (`admitted`)."""
    verdicts: dict[tuple[str, str], Verdict] = {}
    for entry in entries:
        queue = queues.get(entry.cluster_queue or "")
        if entry.admitted is None and entry.running_on is not None and queue and not entry.finished:
            entry.admitted = _running_assignment(entry, queue, flavors)
            verdicts[entry.key] = Verdict(admitted=entry.admitted)
    usage = Usage(queues, entries)
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
