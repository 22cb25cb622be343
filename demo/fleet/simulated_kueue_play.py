"""Kueue played by the simulated gateway on the objects it keeps: its pod webhook (a queued pod
is created gated), its pod controller (the pod's Workload; none left once the pod is gone), its
scheduler (`simulated_kueue_admission`) whose admissions and preemptions are written into the
Workloads, the admitted pods ungated and handed to the scheduler, the preempted ones gated
again; the queues' counts, and the visibility API's pending workloads.

A round runs when a Kueue object is read, and when an operator is read whose pods wait in a
queue (so a new replica is admitted, or not, as soon as it is made). Level-triggered: a round
that finds nothing to change writes nothing.
"""

from __future__ import annotations

import copy
from typing import Any

from django.db import transaction

from core.fleet.base import Manifest
from core.models import SimulatedObject

from . import simulated_kueue as kueue
from . import simulated_kueue_admission as admission
from .simulated_clock import iso
from .simulated_objects import PLACED_LATE_ANNOTATION, waiting_for_a_node

# Reading these plays Kueue first: what they report is its last round's.
KUEUE_KINDS = frozenset({"ClusterQueue", "LocalQueue", "Workload"})


class KueuePlay:
    """Kueue's part of the simulated gateway (it provides `_now`, `_rows`, `_apply_one`,
    `_bind`, `_node_views` and `_gpus_placed`)."""

    def _admission_webhook(self, pod: Manifest, *, since: str) -> None:
        """Kueue's pod webhook, on a new pod: one that asks for a LocalQueue in a namespace
        Kueue manages is gated until Kueue admits it. Pods only: a VMI carries its VM's queue
        label too, but Kueue gates its launcher pod, and KubeVirt would read a gate on the VMI
        as its template changed (RestartRequired)."""
        namespace = (pod.get("metadata") or {}).get("namespace")
        if (pod.get("kind") == "Pod" and kueue.queued_pod(pod)
                and self._kueue_namespaces({namespace})):
            kueue.gate(pod, since)

    def _kueue_namespaces(self, names: set[str]) -> set[str]:
        """Of `names`, the namespaces Kueue manages (managedJobsNamespaceSelector)."""
        return set(
            self._rows("v1", "Namespace")
            .filter(name__in=names, body__metadata__labels__has_key=kueue.MANAGED_NAMESPACE_LABEL)
            .values_list("name", flat=True)
        )

    def _write(self, row: SimulatedObject, body: Manifest, *, restart: bool = False) -> None:
        """Store a controller's change to `row` (`restart`: its kubelet starts over now)."""
        row.body, row.resource_version = body, row.resource_version + 1
        fields = ["body", "resource_version"]
        if restart:
            row.updated_at = self._now()
            fields.append("updated_at")
        row.save(update_fields=fields)

    def _kueue_cohorts(self) -> dict[str, admission.Cohort]:
        """The Cohort objects (a tenant's own, under its shared cohort), by name."""
        return {r.name: admission.cohort(r.body) for r in self._rows(kueue.KUEUE, "Cohort")}

    def _kueue_entries(self) -> tuple[list[admission.Entry], dict[tuple[str, str], Any]]:
        """Kueue's pod controller: a Workload for each pod queued in a managed namespace (and
        none left for a pod that is gone: the garbage collector's part); the Workloads as its
        scheduler sees them, with their pod and Workload rows."""
        candidates = list(self._rows("v1", "Pod").filter(
            body__metadata__labels__has_key=kueue.QUEUE_NAME_LABEL))
        rows = {(r.namespace, r.name): r for r in self._rows(kueue.KUEUE, "Workload")}
        if not candidates and not rows:
            return [], {}
        managed = self._kueue_namespaces({r.namespace for r in candidates})
        pods = {r.body["metadata"].get("uid"): r for r in candidates if r.namespace in managed}
        orphans = [
            key for key, row in rows.items()
            if not any(ref.get("uid") in pods
                       for ref in (row.body.get("metadata") or {}).get("ownerReferences") or [])
        ]
        if orphans:
            self._objects().filter(pk__in=[rows.pop(key).pk for key in orphans]).delete()
        priorities = {
            r.name: int(r.body.get("value") or 0)
            for r in self._rows(kueue.KUEUE, "WorkloadPriorityClass").filter(namespace="")
        }
        local_queues = {
            (r.namespace, r.name): (r.body.get("spec") or {}).get("clusterQueue")
            for r in self._rows(kueue.KUEUE, "LocalQueue")
        }
        bound = {(p.body.get("spec") or {}).get("nodeName") for p in pods.values()}
        node_labels = {
            n.name: (n.body.get("metadata") or {}).get("labels") or {}
            for n in self._rows("v1", "Node").filter(namespace="", name__in=bound - {None})
        }
        entries, by_key = [], {}
        for pod in sorted(pods.values(), key=lambda r: (r.created_at, r.name)):
            name = kueue.workload_name(pod.name)
            row = rows.get((pod.namespace, name))
            if row is None:
                chosen = kueue.labels_of(pod.body).get(kueue.PRIORITY_CLASS_LABEL, "")
                self._apply_one(kueue.workload_manifest(
                    pod.body, priority=priorities.get(chosen, 0),
                    priority_class=chosen if chosen in priorities else "",
                ), at=pod.created_at)
                row = self._rows(kueue.KUEUE, "Workload").get(namespace=pod.namespace, name=name)
            entry = kueue.entry_of(row.body, cluster_queue=local_queues.get(
                (pod.namespace, row.body["spec"]["queueName"])))
            if entry.admitted is None and (pod.namespace, entry.local_queue) not in local_queues:
                entry.cluster_queue = None
            spec = pod.body.get("spec") or {}
            entry.requests = kueue.requests_of(spec)
            entry.node_selector = spec.get("nodeSelector") or {}
            entry.tolerations = spec.get("tolerations") or []
            phase = (pod.body.get("status") or {}).get("phase")
            entry.finished = entry.finished or phase in kueue.FINISHED_PHASES
            if entry.admitted is None and not kueue.gated(pod.body) and spec.get("nodeName"):
                entry.running_on = node_labels.get(spec["nodeName"], {})
            entries.append(entry)
            by_key[entry.key] = (pod, row)
        return entries, by_key

    def _play_kueue(self) -> list[admission.Entry]:
        """One round of Kueue: its pod controller's Workloads, its scheduler's admissions and
        preemptions written into them, the admitted pods ungated (and bound by the scheduler),
        the preempted ones gated again. Level-triggered: a round that finds nothing to change
        writes nothing. Returns the workloads as this round left them."""
        with transaction.atomic():
            # Kueue's scheduler is one loop: a round holds the ClusterQueues while it decides,
            # so two reads at once never both admit into the last of a quota.
            queue_rows = list(
                self._rows(kueue.KUEUE, "ClusterQueue").select_for_update().order_by("pk")
            )
            entries, by_key = self._kueue_entries()
            if not entries:
                return entries
            queues = {r.name: admission.cluster_queue(r.body) for r in queue_rows}
            flavors = {r.name: admission.flavor(r.body)
                       for r in self._rows(kueue.KUEUE, "ResourceFlavor")}
            verdicts = admission.schedule(queues, flavors, entries, self._kueue_cohorts())
            now = iso(self._now())
            nodes, used = None, None
            for entry in entries:
                pod, row = by_key[entry.key]
                verdict = verdicts.get(entry.key)
                previous = row.body.get("status") or {}
                phase = (pod.body.get("status") or {}).get("phase")
                finished = phase if phase in kueue.FINISHED_PHASES else ""
                status = kueue.workload_status(entry, verdict, previous, now, finished)
                if status != previous:
                    self._write(row, {**row.body, "status": status})
                if finished:
                    continue
                body = copy.deepcopy(pod.body)
                if verdict and verdict.preempted_by is not None:
                    # A real cluster deletes a preempted pod (Kueue's pod integration stops it
                    # so) and its owner (the predictor's ReplicaSet, the NodeSet) makes it
                    # again, gated, with a new Workload. Here the pod is gated again, which
                    # is how its successor looks, and keeps its Workload: the record of who
                    # reclaimed the capacity stays readable.
                    body["spec"].pop("nodeName", None)
                    kueue.restore_template(body, row.body)
                    kueue.gate(body, now)
                    (body["metadata"].get("annotations") or {}).pop(PLACED_LATE_ANNOTATION, None)
                    self._write(pod, body, restart=True)
                elif entry.admitted is not None and (
                    kueue.gated(body) or waiting_for_a_node(body)
                ):
                    kueue.ungate(body)
                    kueue.place_in_flavors(body, [
                        flavors.get(name, admission.Flavor(name))
                        for name in sorted(set(entry.admitted.values()))
                    ])
                    if nodes is None:
                        nodes, used = self._node_views(), self._gpus_placed()
                    placed = self._bind(body, nodes, used or {}, now)
                    # Admitted on first sight: placed as it was made (its clock unchanged);
                    # after waiting in the queue: from now on.
                    late = placed and kueue.pending_since(previous)
                    if late:
                        body["metadata"].setdefault("annotations", {})[
                            PLACED_LATE_ANNOTATION] = now
                    if body != pod.body:
                        self._write(pod, body, restart=late)
            return entries

    def _kueue_queue_status(self, row: SimulatedObject, status: Manifest) -> Manifest:
        """Kueue's counts in a ClusterQueue's or LocalQueue's status, from the Workloads as
        its last round left them."""
        local_queues = {
            (r.namespace, r.name): (r.body.get("spec") or {}).get("clusterQueue")
            for r in self._rows(kueue.KUEUE, "LocalQueue")
        }
        entries = [
            kueue.entry_of(r.body, cluster_queue=local_queues.get(
                (r.namespace, (r.body.get("spec") or {}).get("queueName"))))
            for r in self._rows(kueue.KUEUE, "Workload")
        ]
        if row.kind == "LocalQueue":
            mine = [e for e in entries if (e.namespace, e.local_queue) == (row.namespace, row.name)]
            return kueue.queue_status(status, mine, queue=None)
        queue = admission.cluster_queue(row.body)
        queues = {queue.name: queue} | {
            r.name: admission.cluster_queue(r.body)
            for r in self._rows(kueue.KUEUE, "ClusterQueue").exclude(pk=row.pk)
        }
        usage = admission.Usage(queues, entries, self._kueue_cohorts())
        mine = [e for e in entries if e.cluster_queue == queue.name]
        return kueue.queue_status(status, mine, queue=queue, usage=usage)

    def pending_workloads(
        self, *, namespace: str, local_queue: str, limit: int, offset: int
    ) -> list[Manifest]:
        """Kueue's visibility API (`.../namespaces/<ns>/localqueues/<lq>/pendingworkloads`):
        one page of the LocalQueue's pending workloads in queue order, with their positions in
        their ClusterQueue and their LocalQueue."""
        entries = self._play_kueue()
        rows = {(r.namespace, r.name): r for r in self._rows(kueue.KUEUE, "Workload").filter(
            namespace=namespace)}
        mine = [
            (entry, in_cq, in_lq) for entry, in_cq, in_lq in admission.positions(entries)
            if (entry.namespace, entry.local_queue) == (namespace, local_queue)
        ]
        page = []
        for entry, in_cq, in_lq in mine[max(0, offset):max(0, offset) + max(0, limit)]:
            meta = rows[entry.key].body.get("metadata") or {}
            page.append({
                "metadata": {k: meta[k] for k in ("name", "namespace", "creationTimestamp",
                                                  "ownerReferences") if k in meta},
                "priority": entry.priority,
                "localQueueName": entry.local_queue,
                "positionInClusterQueue": in_cq,
                "positionInLocalQueue": in_lq,
            })
        return page
