"""Kueue v0.19 for the simulated fleet, what it does to the objects: the pod integration (its
webhook gates a queued pod, its controller makes the pod's Workload) and what Kueue writes in
the status of Workloads, ClusterQueues and LocalQueues. Pure; the admission itself is
`simulated_kueue_admission`'s, and the gateway plays both (`simulated_kueue_play`).

A pod carrying `kueue.x-k8s.io/queue-name` in a namespace Kueue manages (the portal labels its
tenants' namespaces; Kueue's `managedJobsNamespaceSelector` selects them) is created with the
scheduling gate `kueue.x-k8s.io/admission` and gets a Workload of one pod set (`main`), owned
by the pod.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from .simulated_kueue_admission import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAMATION,
    POD_SET,
    ClusterQueue,
    Entry,
    Flavor,
    Usage,
    Verdict,
    parse,
    quantity,
)

Manifest = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
# The label Kueue's managedJobsNamespaceSelector selects (docs/deployment.md).
MANAGED_NAMESPACE_LABEL = "portal.ai-factory.io/tenant"
HUMAN_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
}
FINISHED_PHASES = ("Succeeded", "Failed")


# --- the pod integration: which pods, and their Workloads ---------------------------------------


def labels_of(obj: Manifest) -> dict[str, str]:
    return dict(((obj.get("metadata") or {}).get("labels")) or {})


def queued_pod(pod: Manifest) -> bool:
    """A pod that asks for a LocalQueue and is not bound yet: Kueue's webhook gates it."""
    return bool(labels_of(pod).get(QUEUE_NAME_LABEL)) and not (pod.get("spec") or {}).get(
        "nodeName"
    )


def gated(pod: Manifest) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == ADMISSION_GATE for g in gates)


def gated_status(since: str) -> Manifest:
    """A gated pod's status, as the API server writes it."""
    return {
        "phase": "Pending",
        "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
            "lastProbeTime": None, "lastTransitionTime": since,
        }],
    }


def gate(pod: Manifest, since: str) -> None:
    """Kueue's pod webhook, in place: the admission gate, and the label that says Kueue
    manages the pod."""
    spec = pod.setdefault("spec", {})
    if not gated(pod):
        spec["schedulingGates"] = [*(spec.get("schedulingGates") or []), {"name": ADMISSION_GATE}]
    pod.setdefault("metadata", {}).setdefault("labels", {})[MANAGED_LABEL] = "true"
    pod["status"] = gated_status(since)


def ungate(pod: Manifest) -> None:
    spec = pod.get("spec") or {}
    gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != ADMISSION_GATE]
    if gates:
        spec["schedulingGates"] = gates
    else:
        spec.pop("schedulingGates", None)
    pod.pop("status", None)


def place_in_flavors(pod: Manifest, flavors: Sequence[Flavor]) -> None:
    """What Kueue does to a pod it admits, in place: the flavors' node labels join its node
    selector and their tolerations its own, so it lands on the flavors' nodes (a shared
    tenant's pod borrowing a dedicated tenant's reserved GPUs tolerates their taint)."""
    spec = pod.setdefault("spec", {})
    for found in flavors:
        if found.node_labels:
            spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **found.node_labels}
        tolerations = list(spec.get("tolerations") or [])
        tolerations += [t for t in found.tolerations if t not in tolerations]
        if tolerations:
            spec["tolerations"] = tolerations


def restore_template(pod: Manifest, workload: Manifest) -> None:
    """A preempted pod as its owner makes it again: the node selector and tolerations of its
    template (the Workload's pod set), without what the flavor it held added."""
    template = (((workload.get("spec") or {}).get("podSets") or [{}])[0].get("template")
                or {}).get("spec") or {}
    spec = pod.setdefault("spec", {})
    for key in ("nodeSelector", "tolerations"):
        if key in template:
            spec[key] = copy.deepcopy(template[key])
        else:
            spec.pop(key, None)


def requests_of(pod_spec: Manifest) -> dict[str, Decimal]:
    """What a pod reserves, as Kueue counts it: its containers' requests summed (a limit alone
    counts as the request), nothing it asks zero of."""
    totals: dict[str, Decimal] = {}
    for container in pod_spec.get("containers") or []:
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in asked.items():
            totals[name] = totals.get(name, Decimal(0)) + parse(value)
    return {name: value for name, value in totals.items() if value > 0}


def workload_name(pod_name: str) -> str:
    """Kueue's name for a pod's Workload: `pod-<name>-<hash>` (GetWorkloadNameForOwnerWithGVK)."""
    suffix = hashlib.sha1(f"{pod_name}Pod".encode(), usedforsecurity=False).hexdigest()[:5]
    return f"pod-{pod_name[:240]}-{suffix}"


def workload_manifest(pod: Manifest, *, priority: int, priority_class: str) -> Manifest:
    """The Workload Kueue's pod controller makes for a pod: one pod set of one pod, the pod's
    queue and priority, owned by the pod (it goes when the pod goes)."""
    meta = pod.get("metadata") or {}
    template = {k: v for k, v in (pod.get("spec") or {}).items()
                if k not in ("schedulingGates", "nodeName")}
    spec: Manifest = {
        "active": True,
        "queueName": labels_of(pod)[QUEUE_NAME_LABEL],
        "priority": priority,
        "podSets": [{"name": POD_SET, "count": 1, "template": {"spec": template}}],
    }
    if priority_class:
        spec["priorityClassRef"] = {
            "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": priority_class,
        }
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(meta["name"]),
            "namespace": meta.get("namespace"),
            "labels": {JOB_UID_LABEL: meta.get("uid", "")},
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta.get("uid", ""),
                "controller": True, "blockOwnerDeletion": True,
            }],
        },
        "spec": spec,
    }


# --- what Kueue writes -------------------------------------------------------------------------


def _condition(
    previous: Sequence[Manifest], kind: str, ok: bool, reason: str, message: str, now: str
) -> Manifest:
    """A condition, keeping its lastTransitionTime while its status stays."""
    status = "True" if ok else "False"
    before = next((c for c in previous if c.get("type") == kind), None)
    since = before["lastTransitionTime"] if before and before.get("status") == status else now
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": since}


def preemption_message(preemptor: Entry, reason: str) -> str:
    return (f"Preempted to accommodate a workload (UID: {preemptor.uid}, JobUID: "
            f"{preemptor.job_uid or 'UNKNOWN'}) due to {HUMAN_REASONS[reason]}")


def workload_status(
    entry: Entry, verdict: Verdict | None, previous: Manifest, now: str, finished_phase: str = ""
) -> Manifest:
    """The Workload's status after this round (the previous one when nothing changed)."""
    conditions = list(previous.get("conditions") or [])
    kept = {c.get("type"): c for c in conditions}
    if finished_phase:
        if kept.get("Finished", {}).get("status") == "True":
            return previous
        finished = _condition(conditions, "Finished", True, finished_phase,
                              f"Pod {finished_phase.lower()}", now)
        return {**previous, "conditions": [*conditions, finished]}
    if verdict is None:
        return previous
    evicted, preempted = kept.get("Evicted"), kept.get("Preempted")
    status: Manifest = {}
    if verdict.admitted is not None:
        status["admission"] = {
            "clusterQueue": entry.cluster_queue,
            "podSetAssignments": [{
                "name": POD_SET,
                "flavors": dict(sorted(verdict.admitted.items())),
                "resourceUsage": {r: quantity(entry.requests[r])
                                  for r in sorted(verdict.admitted)},
                "count": 1,
            }],
        }
        reserved = f"Quota reserved in ClusterQueue {entry.cluster_queue}"
        new = [_condition(conditions, "QuotaReserved", True, "QuotaReserved", reserved, now),
               _condition(conditions, "Admitted", True, "Admitted", "The workload is admitted",
                          now)]
        for before in (evicted, preempted):
            if before and before.get("status") == "True":
                new.append(_condition(conditions, before["type"], False, "QuotaReserved",
                                      f"Previously: {before['message']}", now))
            elif before:
                new.append(before)
    elif verdict.preempted_by is not None:
        message = preemption_message(verdict.preempted_by, verdict.reason)
        new = [_condition(conditions, "QuotaReserved", False, "Preempted", message, now),
               _condition(conditions, "Admitted", False, "NoReservation",
                          "The workload has no reservation", now),
               _condition(conditions, "Evicted", True, "Preempted", message, now),
               _condition(conditions, "Preempted", True, verdict.reason, message, now)]
    else:
        new = [_condition(conditions, "QuotaReserved", False, "Pending", verdict.pending, now)]
        if "Admitted" in kept:
            new.append(_condition(conditions, "Admitted", False, "NoReservation",
                                  "The workload has no reservation", now))
        new += [c for c in (evicted, preempted) if c]
    status["conditions"] = new
    return status


def pending_since(status: Manifest) -> bool:
    """Whether the Workload waited (or was preempted) before: its admission now is late."""
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "False"
               for c in status.get("conditions") or [])


def flavors_usage(queue: ClusterQueue, usage: Usage) -> list[Manifest]:
    """`status.flavorsUsage` (and flavorsReservation) of a ClusterQueue: per flavor of each
    group, what admitted workloads reserve and what of it is borrowed from the cohort."""
    return [
        {"name": name, "resources": [
            {"name": r, "total": quantity(usage.of(queue.name, (name, r))),
             "borrowed": quantity(usage.borrowed(queue, (name, r)))}
            for r in covered
        ]}
        for covered, names in queue.groups for name in names
    ]


def _true(status: Manifest, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or [])


def entry_of(workload: Manifest, *, cluster_queue: str | None) -> Entry:
    """A Workload as its status has it: what it holds while admitted (its admission's usage)."""
    meta, spec = workload.get("metadata") or {}, workload.get("spec") or {}
    status = workload.get("status") or {}
    admission = status.get("admission") if _true(status, "QuotaReserved") else None
    assignment = ((admission or {}).get("podSetAssignments") or [{}])[0]
    requests = {r: parse(v) for r, v in (assignment.get("resourceUsage") or {}).items()}
    if admission is None:
        pod_sets = spec.get("podSets") or [{}]
        requests = requests_of(((pod_sets[0].get("template") or {}).get("spec")) or {})
    return Entry(
        namespace=meta.get("namespace", ""), name=meta.get("name", ""), uid=meta.get("uid", ""),
        job_uid=(meta.get("labels") or {}).get(JOB_UID_LABEL, ""),
        local_queue=spec.get("queueName", ""),
        cluster_queue=(admission or {}).get("clusterQueue") or cluster_queue,
        priority=int(spec.get("priority") or 0), created=meta.get("creationTimestamp", ""),
        requests=requests,
        admitted=dict(assignment.get("flavors") or {}) if admission else None,
        finished=_true(status, "Finished"),
    )


def queue_status(
    status: Manifest, entries: Sequence[Entry], *, queue: ClusterQueue | None,
    usage: Usage | None = None,
) -> Manifest:
    """A ClusterQueue's (`queue`) or a LocalQueue's status with Kueue's counts of `entries`
    (the workloads it queues): pending, reserving and admitted; a ClusterQueue's flavorsUsage
    and flavorsReservation too."""
    live = [e for e in entries if not e.finished]
    holding = sum(1 for e in live if e.admitted is not None)
    counted = {**status, "pendingWorkloads": len(live) - holding,
               "reservingWorkloads": holding, "admittedWorkloads": holding}
    if queue is not None and usage is not None:
        counted["flavorsReservation"] = counted["flavorsUsage"] = flavors_usage(queue, usage)
    return counted
