"""Kueue's side of a workload, read for people: pure functions over plain dicts, like the kinds.

Kueue admits the pods of a portal workload through Workload objects of its own
(`kueue.x-k8s.io/v1beta2`, one per pod, or one per pod group), owned by the pods and labelled
with the pod's uid. While one waits, its `QuotaReserved=False` condition says why in Kueue's
words ("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in
flavor h100, 2 more needed") and Kueue's visibility API says where it stands in the tenant's
LocalQueue and ClusterQueue. Once one was preempted, its `Evicted` / `Preempted` conditions name
the preemptor's Workload uid and why (priority, reclaim by the cohort). This module turns those
into what a workload's page says (`queue_details`, `Preemption`); the services read them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inventory import resource_classes

from .base import Manifest, ObjectKey, condition

KUEUE_WORKLOAD = ("kueue.x-k8s.io/v1beta2", "Workload")
# The label Kueue puts on the Workload it makes for a pod: the pod's uid.
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"

# Kueue's reasons to reserve no quota yet, as its flavor assigner words them (v0.19):
# "insufficient unused quota [in cohort] for R in flavor F, N more needed", "insufficient quota
# for R in flavor F in ClusterQueue", "borrowing limit for R in flavor F exceeded".
_SHORTAGE = re.compile(
    r"(?P<what>insufficient (?:unused )?quota(?: in cohort)?|borrowing limit) for "
    r"(?P<resource>[\w./-]+) in flavor (?P<flavor>[\w.-]+)(?:, (?P<more>\d+) more needed)?"
)
# "Preempted to accommodate a workload (UID: <uid>, JobUID: <uid>) due to <why>; …"
_PREEMPTOR = re.compile(r"\(UID: (?P<uid>[\w-]+)(?:, JobUID: (?P<job_uid>[\w-]+))?\)")
# Kueue's Preempted condition reasons: a workload of its own ClusterQueue with a higher
# priority, fair sharing, or the owner of quota lent to the cohort taking it back.
PREEMPTION_WHY = {
    "InClusterQueue": "higher priority",
    "InCohortFairSharing": "fair sharing in the cohort",
}
RECLAIMS = frozenset({"InCohortReclamation", "InCohortReclaimWhileBorrowing"})


def owner_uids(kueue_workload: Manifest) -> set[str]:
    """The uids of what a Kueue Workload was made for: its owners (the pods) and its job uid."""
    meta = kueue_workload.get("metadata") or {}
    uids = {str(ref.get("uid")) for ref in meta.get("ownerReferences") or [] if ref.get("uid")}
    job_uid = (meta.get("labels") or {}).get(JOB_UID_LABEL)
    return uids | ({job_uid} if job_uid else set())


def object_uids(objects: Mapping[ObjectKey, Manifest]) -> set[str]:
    """The uids of a workload's objects as the cluster reports them."""
    return {str(uid) for obj in objects.values()
            if (uid := (obj.get("metadata") or {}).get("uid"))}


def is_pending(kueue_workload: Manifest) -> bool:
    """Whether Kueue still holds it in the queue: no quota reserved, not finished."""
    reserved = condition(kueue_workload, "QuotaReserved") or {}
    finished = condition(kueue_workload, "Finished") or {}
    return reserved.get("status") != "True" and finished.get("status") != "True"


def kueue_message(kueue_workload: Manifest) -> str:
    """Why Kueue reserves no quota for it: its QuotaReserved=False condition's message."""
    reserved = condition(kueue_workload, "QuotaReserved") or {}
    return str(reserved.get("message") or "") if reserved.get("status") == "False" else ""


def _whole(quantity: Any) -> int:
    try:
        return max(0, int(float(str(quantity))))
    except ValueError:
        return 0


def asked(kueue_workload: Manifest, resource: str) -> int:
    """How many of `resource` (e.g. nvidia.com/gpu) its pod sets ask for in all."""
    total = 0
    for pod_set in (kueue_workload.get("spec") or {}).get("podSets") or []:
        spec = ((pod_set.get("template") or {}).get("spec")) or {}
        per_pod = sum(
            _whole(((c.get("resources") or {}).get("requests") or {}).get(resource)
                   or ((c.get("resources") or {}).get("limits") or {}).get(resource) or 0)
            for c in spec.get("containers") or []
        )
        total += per_pod * _whole(pod_set.get("count") or 1)
    return total


@dataclass(frozen=True)
class Shortage:
    """One reason Kueue gives: what it lacks, in which flavor, and how much more it needs."""

    resource: str
    flavor: str
    more: int | None
    borrowing_limit: bool


def shortages(message: str) -> list[Shortage]:
    return [Shortage(m["resource"], m["flavor"], int(m["more"]) if m["more"] else None,
                     m["what"] == "borrowing limit")
            for m in _SHORTAGE.finditer(message)]


def ordinal(number: int) -> str:
    """1 → "1st", 2 → "2nd", 11 → "11th", 23 → "23rd"."""
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10,
                                                                                  "th")
    return f"{number}{suffix}"


def _units(count: int, resource_class: str | None) -> str:
    """2 of `gpu:nvidia-h100-80gb` → "2 NVIDIA H100 80GB HBM3 GPUs"."""
    try:
        parsed = resource_classes.parse(resource_class or "")
    except resource_classes.UnknownResourceClass:
        return f"{count} GPU{'s' if count != 1 else ''}"
    noun = parsed.unit_noun + ("s" if count != 1 else "")
    if parsed.kind == "mig":
        noun = f"MIG {parsed.mig_profile} {'instances' if count != 1 else 'instance'}"
    model = parsed.gpu_model.display_name if parsed.gpu_model else ""
    return f"{count} {model} {noun}".replace("  ", " ")


def _asked_as(resource_class: str | None) -> tuple[str, ...]:
    """The resources a pod asks for a class's units by: its extended resource, and for whole
    GPUs the one a VM's passthrough GPU of the model is."""
    try:
        parsed = resource_classes.parse(resource_class or "")
    except resource_classes.UnknownResourceClass:
        return ()
    passthrough = (resource_classes.PASSTHROUGH_RESOURCES.get(parsed.gpu_model.key, "")
                   if parsed.kind == "gpu" and parsed.gpu_model else "")
    return tuple(r for r in (parsed.kubernetes_resource, passthrough) if r)


def queue_details(
    *,
    pending: Iterable[Manifest],
    positions: Iterable[Mapping[str, Any]] | None,
    resource_class: str | None,
    nominal: int,
    in_use: int,
    in_cohort: bool,
) -> dict[str, Any]:
    """What the page and the API say of a workload whose pods wait in the queue.

    `pending`: its Kueue Workloads still waiting; `positions`: the visibility API's items of
    them (None: the API did not answer); `resource_class` its GPU class (or `hami:<model>` for
    HAMi shares: vGPUs, not counted as GPUs), `nominal` the tenant's quota of it and `in_use`
    what Kueue counts admitted of it; `in_cohort`: it may borrow.
    """
    pending = list(pending)
    gpus = sum(asked(wl, resource) for wl in pending for resource in _asked_as(resource_class))
    message = next((m for wl in pending if (m := kueue_message(wl))), "")
    found = shortages(message)
    flavor = next((s.flavor for s in found if s.flavor), "")
    seen = list(positions or [])
    # Kueue counts from 0; people from 1. Its first pending workload is where it stands.
    local = min((_whole(p.get("positionInLocalQueue")) + 1 for p in seen), default=None)
    cluster = min((_whole(p.get("positionInClusterQueue")) + 1 for p in seen), default=None)
    # Beyond the tenant's own quota, what the cohort would lend (shared tenants only).
    borrow = min(gpus, max(0, in_use + gpus - nominal)) if in_cohort and gpus else 0
    limit_reached = any(s.borrowing_limit for s in found)

    words = [f"{ordinal(local)} in the queue" if local else "position in the queue unknown"]
    hami_model = resource_classes.parse_hami_gpu(resource_class or "")
    shares = sum(asked(wl, resource_classes.GPU_RESOURCE) for wl in pending) if hami_model else 0
    if gpus or shares:
        waits = (f"waits for {_units(gpus, resource_class)}" if gpus else
                 f"waits for {shares} {hami_model.display_name} HAMi "
                 f"share{'s' if shares != 1 else ''}")
        words.append(f"{waits} (flavor {flavor})" if flavor else waits)
    if limit_reached:
        words.append("the cohort's borrowing limit is reached")
    elif borrow:
        words.append(f"would borrow {borrow} from the cohort")
    return {
        "position_in_local_queue": local,
        "position_in_cluster_queue": cluster,
        "pending": len(pending),
        "gpus": gpus,
        "flavor": flavor,
        "would_borrow": borrow,
        "kueue_message": message,
        "summary": " · ".join(words),
    }


@dataclass(frozen=True)
class Preemption:
    """One eviction of a Kueue Workload to make room for another, as its conditions say."""

    workload_name: str
    at: str  # the condition's lastTransitionTime: with the name, what makes it one eviction
    reason: str  # Kueue's Preempted reason (InClusterQueue, InCohortReclamation…) or Preempted
    message: str  # Kueue's words, naming the preemptor's uid
    preemptor_uid: str
    preemptor_job_uid: str

    @property
    def key(self) -> str:
        return f"Kueue Workload {self.workload_name}, {self.at}"

    @property
    def why(self) -> str:
        return PREEMPTION_WHY.get(self.reason, "")


def preemption(kueue_workload: Manifest) -> Preemption | None:
    """The eviction of a Kueue Workload by preemption, if its conditions report one."""
    preempted = condition(kueue_workload, "Preempted") or {}
    evicted = condition(kueue_workload, "Evicted") or {}
    if preempted.get("status") == "True":
        cond = preempted
    elif evicted.get("status") == "True" and evicted.get("reason") == "Preempted":
        cond = evicted
    else:
        return None
    message = str(cond.get("message") or evicted.get("message") or "")
    found = _PREEMPTOR.search(message)
    return Preemption(
        workload_name=str((kueue_workload.get("metadata") or {}).get("name") or ""),
        at=str(cond.get("lastTransitionTime") or evicted.get("lastTransitionTime") or ""),
        reason=str(cond.get("reason") or ""),
        message=message,
        preemptor_uid=found["uid"] if found else "",
        preemptor_job_uid=(found["job_uid"] or "") if found else "",
    )
