"""The demo fleet: Kubernetes objects kept in the database, with controllers played on read.

Apply stores the manifest: its top-level sections replace the stored ones, the server's metadata
is kept, and so is `status` for the kinds a controller owns. Reads give those kinds the status
their controller would report: "progressing" until FLEET_SIMULATED_READY_SECONDS have passed
since the last spec change (`SimulatedObject.updated_at` marks it), ready afterwards.
Unlike SSA, a field dropped from a later manifest stays when its whole section is dropped.

Reading an object an operator owns also plays that operator (`simulated_operators`): what it
would have made by now is created, dated from when it would have made it (so it is as far
along as on a real cluster), placed on a node by a simple scheduler, and read back for the
owner's status: a vCluster's control plane and kubeconfig Secret, a VM's DataVolume and
VirtualMachineInstance, a Slurm cluster's StatefulSets, Deployments and worker pods, an
inference endpoint's predictor pods. The scheduler counts the GPUs already placed on each node:
a pod (or a VM) beyond what the nodes it may use have left stays Pending with the scheduler's
words, and is placed on a later read once room frees up (as the scheduler retries). Deleting
an object deletes what depends on it (ownerReferences, and a Helm release's objects), at once:
the garbage collector's and Helm's part.

Kueue is played too (`simulated_kueue`): a pod sent to a tenant's LocalQueue is created gated
and gets a Workload; reading a Kueue object, or an operator whose pods wait in a queue, runs a
round of Kueue's admission and preemption, and the admitted pods go to the scheduler.
"""

from __future__ import annotations

import contextlib
import copy
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.fleet.base import FleetGateway, Manifest, PermanentFleetError
from core.fleet.labels import label_selector_matcher
from core.models import SimulatedObject

from . import simulated_kueue as kueue
from .simulated_clock import Clock, iso
from .simulated_controllers import (
    CONTROLLERS,
    OPERATORS,
    controller_status,
    ready_after,
    resource_quota_used,
)
from .simulated_kubevirt import UNSCHEDULABLE
from .simulated_objects import launcher_pod, merge_patch, waiting_for_a_node
from .simulated_operators import Made, Plan, dependents, depends_on, key_of
from .simulated_scheduler import (
    NodeView,
    gpu_requests,
    schedule,
    unschedulable_status,
)

# Seconds an object's controller takes here, when longer than FLEET_SIMULATED_READY_SECONDS.
READY_AFTER_ANNOTATION = "simulated.ai-factory.io/ready-after-seconds"
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "PriorityClass",
        "RuntimeClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "IngressClass",
        "ClusterQueue",
        "ResourceFlavor",
        "Cohort",
        "WorkloadPriorityClass",
        "ClusterServingRuntime",
    }
)
SERVER_METADATA = ("uid", "creationTimestamp", "generation")
IGNORED_METADATA = (*SERVER_METADATA, "resourceVersion", "managedFields", "deletionTimestamp")
# An operator's round of making objects may enable the next (a VM's disk, then its VMI).
OPERATOR_ROUNDS = 4
# Set on a VMI no node could take: the scheduler's words for its launcher pod.
UNSCHEDULABLE_ANNOTATION = UNSCHEDULABLE
VMI_NODE_LABEL = "kubevirt.io/nodeName"
FINISHED_PHASES = ("Succeeded", "Failed")
# Set on a pod placed once room freed up: its owner waits for it to run.
PLACED_LATE_ANNOTATION = "simulated.portal/placed-late"
# Reading these plays Kueue first: what they report is its last round's.
KUEUE_KINDS = frozenset({"ClusterQueue", "LocalQueue", "Workload"})


def _render(row: SimulatedObject) -> Manifest:
    body = copy.deepcopy(row.body)
    metadata = body.setdefault("metadata", {})
    metadata["resourceVersion"] = str(row.resource_version)
    if row.namespace:
        metadata["namespace"] = row.namespace
    return body


class SimulatedFleetGateway(FleetGateway):
    """A fleet that lives in the portal's own database; labelled as a demo in the UI."""

    backend = "simulated"

    def _scope(self, kind: str, namespace: str | None) -> str:
        if kind in CLUSTER_SCOPED_KINDS:
            return ""
        if not namespace:
            raise PermanentFleetError(f"{kind} is namespaced: a namespace is required")
        return namespace

    def _rows(self, api_version: str, kind: str) -> Any:
        return SimulatedObject.objects.filter(api_version=api_version, kind=kind)

    def apply(self, *, manifests: list[Manifest]) -> list[Manifest]:
        return [self._apply_one(manifest) for manifest in manifests]

    @transaction.atomic
    def _apply_one(self, manifest: Manifest, *, at: datetime | None = None) -> Manifest:
        """Store one manifest; `at` dates a creation or a spec change (an operator's, made
        when it would have made it), now by default."""
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        metadata = manifest.get("metadata")
        if not (api_version and kind and isinstance(metadata, dict) and metadata.get("name")):
            raise PermanentFleetError("a manifest needs apiVersion, kind and metadata.name")
        name, namespace = metadata["name"], self._scope(kind, metadata.get("namespace"))
        # A controller owns the status of its kinds; for the others (Node, Pod) the demo-data
        # loader plays kubelet and may bring one.
        owned = (api_version, kind) in CONTROLLERS
        applied = copy.deepcopy({k: v for k, v in manifest.items() if k != "status" or not owned})
        for key in IGNORED_METADATA:
            applied["metadata"].pop(key, None)
        applied["metadata"].pop("namespace", None)
        if namespace:
            applied["metadata"]["namespace"] = namespace
        key = {"api_version": api_version, "kind": kind, "namespace": namespace, "name": name}

        row = SimulatedObject.objects.select_for_update().filter(**key).first()
        if row is None:
            now = min(at, timezone.now()) if at else timezone.now()
            if kind == "Pod":
                self._admission_webhook(applied, since=iso(now))
            applied["metadata"].update(
                uid=str(uuid.uuid4()), creationTimestamp=iso(now), generation=1
            )
            try:
                with transaction.atomic():
                    row = SimulatedObject.objects.create(
                        **key, body=applied, created_at=now, updated_at=now
                    )
                return _render(row)
            except IntegrityError:  # created concurrently: apply over it instead
                row = SimulatedObject.objects.select_for_update().get(**key)

        live = row.body
        merged = {**live, **applied}
        merged["metadata"] = {
            **applied["metadata"],
            **{k: live["metadata"][k] for k in SERVER_METADATA if k in live.get("metadata", {})},
        }
        if merged == live:
            return _render(row)  # a repeated apply changes nothing, not even resourceVersion
        spec_changed = any(
            merged.get(k) != live.get(k) for k in (set(merged) | set(live)) - {"metadata", "status"}
        )
        if spec_changed:
            merged["metadata"]["generation"] = int(live["metadata"].get("generation", 1)) + 1
            row.updated_at = min(at, timezone.now()) if at else timezone.now()
        row.body = merged
        row.resource_version += 1
        row.save(update_fields=["body", "resource_version", "updated_at"])
        return _render(row)

    @transaction.atomic
    def create(self, *, manifest: Manifest) -> bool:
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        metadata = manifest.get("metadata")
        if not (api_version and kind and isinstance(metadata, dict) and metadata.get("name")):
            raise PermanentFleetError("a manifest needs apiVersion, kind and metadata.name")
        namespace = self._scope(kind, metadata.get("namespace"))
        there = self._rows(api_version, kind).filter(namespace=namespace, name=metadata["name"])
        if there.exists():
            return False
        self._apply_one(manifest)
        return True

    def _clock(self, row: SimulatedObject, now: datetime) -> Clock:
        delay = timedelta(seconds=settings.FLEET_SIMULATED_READY_SECONDS)
        # An object may take longer than the fleet's delay (the demo's endpoint still coming up).
        annotations = (row.body.get("metadata") or {}).get("annotations") or {}
        with contextlib.suppress(KeyError, TypeError, ValueError):
            delay = max(delay, timedelta(seconds=float(annotations[READY_AFTER_ANNOTATION])))
        return Clock(
            created_at=row.created_at,
            changed_at=row.updated_at,
            ready_after=ready_after(row.api_version, row.kind, delay),
            now=now,
            cluster_domain=settings.KUBERNETES_CLUSTER_DOMAIN,
        )

    def _observe(self, row: SimulatedObject, now: datetime | None = None) -> Manifest:
        """Play the kind's controller: make what it would have made by now, and write the
        status it would report, if it changed."""
        now = now or timezone.now()
        children = self._play_operator(row, now)
        status = controller_status(row.body, self._clock(row, now), children)
        if status:
            status = self._with_usage(row, status)
        if status is None or row.body.get("status") == status:
            return _render(row)
        body = {**row.body, "status": status}
        # Optimistic write: a concurrent apply wins and the next read observes again.
        written = SimulatedObject.objects.filter(
            pk=row.pk, resource_version=row.resource_version
        ).update(body=body, resource_version=row.resource_version + 1)
        if written:
            row.body, row.resource_version = body, row.resource_version + 1
        return _render(row)

    # --- operators: what controllers make ---------------------------------------------------

    def _dependent_rows(
        self, owner: SimulatedObject, kinds: tuple[tuple[str, str], ...]
    ) -> dict[tuple[str, str, str], SimulatedObject]:
        """The owner's dependents of `kinds` in its namespace, directly or through another."""
        candidates = [
            row
            for row in SimulatedObject.objects.filter(
                namespace=owner.namespace, kind__in={kind for _, kind in kinds}
            )
            if (row.api_version, row.kind) in kinds
        ]
        by_body = {id(row.body): row for row in candidates}
        found = dependents(owner.body, [row.body for row in candidates])
        return {key_of(body): by_body[id(body)] for body in found}

    def _play_operator(self, row: SimulatedObject, now: datetime) -> list[Manifest]:
        """Make what the owner's operator has made by now; its dependents, as read back."""
        operator = OPERATORS.get((row.api_version, row.kind))
        if operator is None or not row.namespace:
            return []
        clock = self._clock(row, now)
        kueue_played = False
        for round_ in range(OPERATOR_ROUNDS + 1):
            rows = self._dependent_rows(row, operator.makes)
            if not kueue_played and any(
                child.kind == "Pod" and kueue.gated(child.body) for child in rows.values()
            ):
                # Kueue admits what waits in its queues (the pods just made among them).
                self._play_kueue()
                kueue_played = True
                rows = self._dependent_rows(row, operator.makes)
            children = [self._observe(child, now) for child in rows.values()]
            if round_ == OPERATOR_ROUNDS:
                break
            if not self._carry_out(row, operator.plan(row.body, clock, children), rows):
                break
        return children

    def _carry_out(
        self, owner: SimulatedObject, plan: Plan, rows: dict[tuple[str, str, str], Any]
    ) -> bool:
        """Create what the plan makes that is missing, keep in step what it says, delete the
        owner's dependents of the pruned kinds it no longer makes. True if anything changed."""
        changed, nodes, used = False, None, None
        made = {item.key: item for item in plan.made}
        for key, item in made.items():
            existing = rows.get(key)
            if existing is None:
                if self._rows(key[0], key[1]).filter(namespace=owner.namespace,
                                                     name=key[2]).exists():
                    continue  # someone else's object of that name: leave it alone
                if nodes is None and key[1] in ("Pod", "VirtualMachineInstance"):
                    nodes, used = self._node_views(), self._gpus_placed()
                self._apply_one(self._placed(item, nodes or [], used or {}), at=item.at)
                changed = True
            elif waiting_for_a_node(existing.body):
                if nodes is None:
                    nodes, used = self._node_views(), self._gpus_placed()
                changed |= self._place_again(existing, nodes, used or {})
            elif item.in_step:
                version = existing.resource_version
                changed |= int(self._apply_one(item.manifest, at=item.at)["metadata"][
                    "resourceVersion"]) != version
        doomed = [
            child for key, child in rows.items()
            if (key[0], key[1]) in plan.prune and key not in made
            and depends_on(child.body, owner.body)
        ]
        if doomed:
            self._delete_rows(doomed)
        return changed or bool(doomed)

    def _node_views(self) -> list[NodeView]:
        views = []
        for row in self._rows("v1", "Node").filter(namespace=""):
            spec, meta = row.body.get("spec") or {}, row.body.get("metadata") or {}
            views.append(NodeView(
                name=row.name,
                labels=dict(meta.get("labels") or {}),
                taints=tuple(spec.get("taints") or ()),
                unschedulable=bool(spec.get("unschedulable")),
                allocatable=dict((row.body.get("status") or {}).get("allocatable") or {}),
            ))
        return views

    def _gpus_placed(self) -> dict[str, dict[str, int]]:
        """Per node, the GPUs and MIG instances what is bound there asks for: pods not
        finished, and running VMs' launcher pods (a VMI labelled with its node)."""
        used: dict[str, dict[str, int]] = {}

        def add(node: str, asked: dict[str, int]) -> None:
            on_node = used.setdefault(node, {})
            for resource, units in asked.items():
                on_node[resource] = on_node.get(resource, 0) + units

        for row in self._rows("v1", "Pod"):
            spec = row.body.get("spec") or {}
            phase = (row.body.get("status") or {}).get("phase")
            if spec.get("nodeName") and phase not in FINISHED_PHASES:
                add(spec["nodeName"], gpu_requests(spec))
        for row in SimulatedObject.objects.filter(kind="VirtualMachineInstance"):
            node = ((row.body.get("metadata") or {}).get("labels") or {}).get(VMI_NODE_LABEL)
            if node:
                add(node, gpu_requests(launcher_pod(row.body.get("spec") or {})))
        return used

    def _placed(self, item: Made, nodes: list[NodeView], used: dict) -> Manifest:
        """The scheduler's part: a new pod is bound to a node (or left Pending with the
        scheduler's reason); a new VMI is labelled with the node its launcher pod lands on (or
        annotated with the scheduler's reason). What is placed is added to `used`."""
        manifest = copy.deepcopy(item.manifest)
        self._admission_webhook(manifest, since=iso(item.at))
        self._bind(manifest, nodes, used, iso(item.at))
        return manifest

    def _bind(self, manifest: Manifest, nodes: list[NodeView], used: dict, since: str) -> bool:
        """Place the pod or VMI `manifest` (in place); True if a node took it."""
        name, spec = manifest["metadata"]["name"], manifest.get("spec") or {}
        metadata = manifest["metadata"]
        if manifest["kind"] == "Pod":
            if spec.get("nodeName"):
                return True
            if kueue.gated(manifest):
                return False  # Kueue has not admitted it: the scheduler leaves it be
            pod = spec
        elif manifest["kind"] == "VirtualMachineInstance":
            pod = launcher_pod(spec)  # asks for the passthrough GPUs by their resource names
        else:
            return True
        node = schedule(name, pod, nodes, used)
        if node is None:
            verdict = unschedulable_status(pod, nodes, since, used)
            if manifest["kind"] == "Pod":
                manifest["status"] = verdict
            else:
                message = verdict["conditions"][0]["message"]
                metadata.setdefault("annotations", {})[UNSCHEDULABLE_ANNOTATION] = message
            return False
        if manifest["kind"] == "Pod":
            spec["nodeName"] = node
            manifest.pop("status", None)
        else:
            metadata.setdefault("labels", {})[VMI_NODE_LABEL] = node
            (metadata.get("annotations") or {}).pop(UNSCHEDULABLE_ANNOTATION, None)
        on_node = used.setdefault(node, {})
        for resource, units in gpu_requests(pod).items():
            on_node[resource] = on_node.get(resource, 0) + units
        return True

    def _place_again(self, row: SimulatedObject, nodes: list[NodeView], used: dict) -> bool:
        """The scheduler retries a pod (or VMI) it left Pending: bound once room frees up,
        its kubelet (or virt-handler) starting from now. True if it was placed."""
        body = copy.deepcopy(row.body)
        if not self._bind(body, nodes, used, iso(timezone.now())):
            return False
        body["metadata"].setdefault("annotations", {})[PLACED_LATE_ANNOTATION] = iso(
            timezone.now()
        )
        row.body, row.resource_version = body, row.resource_version + 1
        row.updated_at = timezone.now()
        row.save(update_fields=["body", "resource_version", "updated_at"])
        return True

    def _with_usage(self, row: SimulatedObject, status: Manifest) -> Manifest:
        """Quota controller: count what the pods the demo runs request. Kueue: count the
        workloads a queue holds, and what the admitted ones reserve."""
        if row.kind == "ResourceQuota" and "hard" in status:
            pods = [p.body for p in self._rows("v1", "Pod").filter(namespace=row.namespace)]
            objects = list(
                SimulatedObject.objects.filter(namespace=row.namespace)
                .exclude(api_version="v1")
                .values_list("api_version", "kind")
            )
            return {**status, "used": resource_quota_used(status["hard"], pods, objects)}
        if row.kind in ("ClusterQueue", "LocalQueue"):
            return self._kueue_queue_status(row, status)
        return status

    def get(
        self, *, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Manifest | None:
        if kind in KUEUE_KINDS:
            self._play_kueue()
        row = (
            self._rows(api_version, kind)
            .filter(namespace=self._scope(kind, namespace), name=name)
            .first()
        )
        return None if row is None else self._observe(row)

    @transaction.atomic
    def delete(
        self, *, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> bool:
        scope = self._scope(kind, namespace)
        row = self._rows(api_version, kind).filter(namespace=scope, name=name).first()
        if row is None:
            return False
        self._delete_rows([row])
        return True

    def _delete_rows(self, rows: list[SimulatedObject]) -> None:
        """Delete the rows and what depends on them, as the garbage collector (ownerReferences)
        and Helm (a release's objects) would; a namespace takes its contents with it."""
        doomed = {row.pk for row in rows}
        for namespace in {row.namespace for row in rows if row.namespace}:
            candidates = list(
                SimulatedObject.objects.filter(namespace=namespace).exclude(pk__in=doomed)
            )
            by_body = {id(c.body): c for c in candidates}
            bodies = [c.body for c in candidates]
            for owner in (row for row in rows if row.namespace == namespace):
                doomed |= {by_body[id(body)].pk for body in dependents(owner.body, bodies)}
        SimulatedObject.objects.filter(pk__in=doomed).delete()
        for row in rows:
            if (row.api_version, row.kind) == ("v1", "Namespace"):
                SimulatedObject.objects.filter(namespace=row.name).delete()

    def list(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Manifest]:
        if kind in KUEUE_KINDS:
            self._play_kueue()
        rows = self._rows(api_version, kind).order_by("namespace", "name")
        if namespace and kind not in CLUSTER_SCOPED_KINDS:
            rows = rows.filter(namespace=namespace)
        matches = label_selector_matcher(label_selector)
        return [
            self._observe(row)
            for row in rows
            if matches((row.body.get("metadata") or {}).get("labels") or {})
        ]

    @transaction.atomic
    def patch_node(self, *, name: str, patch: Manifest) -> Manifest:
        row = self._rows("v1", "Node").select_for_update().filter(namespace="", name=name).first()
        if row is None:
            raise PermanentFleetError(f'nodes "{name}" not found', status=404)
        body = merge_patch(row.body, patch)
        body["metadata"] = {**body.get("metadata", {}), "name": name}
        if body != row.body:
            row.body, row.resource_version = body, row.resource_version + 1
            row.save(update_fields=["body", "resource_version"])
        return _render(row)

    def evict_pod(self, *, name: str, namespace: str) -> None:
        self._rows("v1", "Pod").filter(namespace=namespace, name=name).delete()

    # --- Kueue: admission through the tenants' queues ------------------------------------------

    def _admission_webhook(self, pod: Manifest, *, since: str) -> None:
        """Kueue's pod webhook, on a new pod: one that asks for a LocalQueue in a namespace
        Kueue manages is gated until Kueue admits it."""
        namespace = (pod.get("metadata") or {}).get("namespace")
        if kueue.queued_pod(pod) and self._kueue_namespaces({namespace}):
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
            row.updated_at = timezone.now()
            fields.append("updated_at")
        row.save(update_fields=fields)

    def _kueue_entries(self) -> tuple[list[kueue.Entry], dict[tuple[str, str], Any]]:
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
            SimulatedObject.objects.filter(pk__in=[rows.pop(key).pk for key in orphans]).delete()
        priorities = {
            r.name: int(r.body.get("value") or 0)
            for r in self._rows(kueue.KUEUE, "WorkloadPriorityClass").filter(namespace="")
        }
        local_queues = {
            (r.namespace, r.name): (r.body.get("spec") or {}).get("clusterQueue")
            for r in self._rows(kueue.KUEUE, "LocalQueue")
        }
        endpoints = {
            r.body["metadata"].get("uid"): r
            for r in self._rows("serving.kserve.io/v1beta1", "InferenceService").filter(
                namespace__in=managed)
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
            owner = next((ref for ref in (pod.body.get("metadata") or {}).get("ownerReferences")
                          or [] if ref.get("kind") == "InferenceService"), None)
            if owner and owner.get("uid") in endpoints:
                predictor = (endpoints[owner["uid"]].body.get("spec") or {}).get("predictor") or {}
                entry.endpoint = owner["uid"]
                entry.floor = max(1, int(predictor.get("minReplicas") or 1))
            entries.append(entry)
            by_key[entry.key] = (pod, row)
        return entries, by_key

    def _play_kueue(self) -> list[kueue.Entry]:
        """One round of Kueue: its pod controller's Workloads, its scheduler's admissions and
        preemptions written into them, the admitted pods ungated (and bound by the scheduler),
        the preempted ones gated again. Level-triggered: a round that finds nothing to change
        writes nothing. Returns the workloads as this round left them."""
        with transaction.atomic():
            entries, by_key = self._kueue_entries()
            if not entries:
                return entries
            queues = {r.name: kueue.cluster_queue(r.body)
                      for r in self._rows(kueue.KUEUE, "ClusterQueue")}
            flavors = {r.name: kueue.flavor(r.body)
                       for r in self._rows(kueue.KUEUE, "ResourceFlavor")}
            verdicts = kueue.schedule(queues, flavors, entries)
            now = iso(timezone.now())
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
                    kueue.gate(body, now)
                    (body["metadata"].get("annotations") or {}).pop(PLACED_LATE_ANNOTATION, None)
                    self._write(pod, body, restart=True)
                elif entry.admitted is not None and (
                    kueue.gated(body) or waiting_for_a_node(body)
                ):
                    kueue.ungate(body)
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
        queue = kueue.cluster_queue(row.body)
        queues = {queue.name: queue} | {
            r.name: kueue.cluster_queue(r.body)
            for r in self._rows(kueue.KUEUE, "ClusterQueue").exclude(pk=row.pk)
        }
        usage = kueue.Usage(queues, entries)
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
            (entry, in_cq, in_lq) for entry, in_cq, in_lq in kueue.positions(entries)
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
