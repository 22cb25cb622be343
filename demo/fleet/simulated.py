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
VirtualMachineInstance (and the VMI's virt-launcher pod), a Slurm cluster's StatefulSets,
Deployments and worker pods, an inference endpoint's predictor pods, the pods of a StatefulSet
the portal applies (a notebook's, or a Slurm cluster's database; `simulated_apps`). The
scheduler counts the GPUs already placed on each node: a pod (a VM's launcher pod too) beyond
what the nodes it may use have left stays Pending with the scheduler's words, and is placed on
a later read once room frees up (as the scheduler retries). Deleting
an object deletes what depends on it (ownerReferences, and a Helm release's objects), at once:
the garbage collector's and Helm's part.

Kueue is played too (`simulated_kueue_play`): a pod sent to a tenant's LocalQueue is created gated
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

from core.fleet.base import Connection, FleetGateway, Manifest, PermanentFleetError
from core.fleet.labels import label_selector_matcher
from core.models import SimulatedObject
from inventory.models import DEFAULT_CLUSTER

from .simulated_clock import Clock, iso
from .simulated_controllers import (
    CONTROLLERS,
    OPERATORS,
    controller_status,
    ready_after,
    resource_quota_used,
)
from .simulated_kueue import gated
from .simulated_kueue_play import KUEUE_KINDS, KueuePlay
from .simulated_objects import PLACED_LATE_ANNOTATION, merge_patch, waiting_for_a_node
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
FINISHED_PHASES = ("Succeeded", "Failed")


def _render(row: SimulatedObject) -> Manifest:
    body = copy.deepcopy(row.body)
    metadata = body.setdefault("metadata", {})
    metadata["resourceVersion"] = str(row.resource_version)
    if row.namespace:
        metadata["namespace"] = row.namespace
    return body


class SimulatedFleetGateway(KueuePlay, FleetGateway):
    """A fleet that lives in the portal's own database; labelled as a demo in the UI."""

    backend = "simulated"

    def __init__(self, *, connection: Connection | None = None) -> None:
        self.cluster = connection.cluster if connection else DEFAULT_CLUSTER

    def _objects(self) -> Any:
        """This cluster's objects (each simulated cluster is a fleet of its own)."""
        return SimulatedObject.objects.filter(cluster=self.cluster)

    def _now(self) -> datetime:
        return timezone.now()

    def _scope(self, kind: str, namespace: str | None) -> str:
        if kind in CLUSTER_SCOPED_KINDS:
            return ""
        if not namespace:
            raise PermanentFleetError(f"{kind} is namespaced: a namespace is required")
        return namespace

    def _rows(self, api_version: str, kind: str) -> Any:
        return self._objects().filter(api_version=api_version, kind=kind)

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

        row = self._objects().select_for_update().filter(**key).first()
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
                        cluster=self.cluster, **key, body=applied, created_at=now, updated_at=now
                    )
                return _render(row)
            except IntegrityError:  # created concurrently: apply over it instead
                row = self._objects().select_for_update().get(**key)

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
        status = controller_status(row.body, self._clock(row, now), children,
                                   self._storage_credentials(row))
        if status:
            status = self._with_usage(row, status)
        if status is None or row.body.get("status") == status:
            return _render(row)
        body = {**row.body, "status": status}
        # Optimistic write: a concurrent apply wins and the next read observes again.
        written = self._objects().filter(
            pk=row.pk, resource_version=row.resource_version
        ).update(body=body, resource_version=row.resource_version + 1)
        if written:
            row.body, row.resource_version = body, row.resource_version + 1
        return _render(row)

    def _storage_credentials(self, row: SimulatedObject) -> frozenset[str]:
        """What KServe would hand an InferenceService's storage initializer: the keys of the
        Secrets its predictor's ServiceAccount lists. None named, none read (no query)."""
        predictor = (row.body.get("spec") or {}).get("predictor") or {}
        account = predictor.get("serviceAccountName") if row.kind == "InferenceService" else None
        if not account or not row.namespace:
            return frozenset()
        found = self._rows("v1", "ServiceAccount").filter(namespace=row.namespace,
                                                          name=account).first()
        listed = [ref.get("name") for ref in ((found.body if found else {}).get("secrets") or [])
                  if isinstance(ref, dict)]
        keys: set[str] = set()
        for secret in self._rows("v1", "Secret").filter(namespace=row.namespace, name__in=listed):
            keys |= {key for key, value in (secret.body.get("data") or {}).items() if value}
        return frozenset(keys)

    # --- operators: what controllers make ---------------------------------------------------

    def _dependent_rows(
        self, owner: SimulatedObject, kinds: tuple[tuple[str, str], ...]
    ) -> dict[tuple[str, str, str], SimulatedObject]:
        """The owner's dependents of `kinds` in its namespace, directly or through another."""
        candidates = [
            row
            for row in self._objects().filter(
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
        if operator is None or not row.namespace or not operator.owns(row.body):
            return []
        clock = self._clock(row, now)
        kueue_played = False
        for round_ in range(OPERATOR_ROUNDS + 1):
            rows = self._dependent_rows(row, operator.makes)
            if not kueue_played and any(
                child.kind == "Pod" and gated(child.body) for child in rows.values()
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
                if nodes is None and key[1] == "Pod":
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
        finished (VMs' launcher pods among them)."""
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
        return used

    def _placed(self, item: Made, nodes: list[NodeView], used: dict) -> Manifest:
        """The scheduler's part: a new pod is bound to a node (or left Pending with the
        scheduler's reason). What is placed is added to `used`."""
        manifest = copy.deepcopy(item.manifest)
        self._admission_webhook(manifest, since=iso(item.at))
        self._bind(manifest, nodes, used, iso(item.at))
        return manifest

    def _bind(self, manifest: Manifest, nodes: list[NodeView], used: dict, since: str) -> bool:
        """Place the pod `manifest` (in place); True if a node took it."""
        name, spec = manifest["metadata"]["name"], manifest.get("spec") or {}
        if manifest["kind"] != "Pod" or spec.get("nodeName"):
            return True
        if gated(manifest):
            return False  # Kueue has not admitted it: the scheduler leaves it be
        node = schedule(name, spec, nodes, used)
        if node is None:
            manifest["status"] = unschedulable_status(spec, nodes, since, used)
            return False
        spec["nodeName"] = node
        manifest.pop("status", None)
        on_node = used.setdefault(node, {})
        for resource, units in gpu_requests(spec).items():
            on_node[resource] = on_node.get(resource, 0) + units
        return True

    def _place_again(self, row: SimulatedObject, nodes: list[NodeView], used: dict) -> bool:
        """The scheduler retries a pod it left Pending: bound once room frees up, its kubelet
        (and a VM's virt-handler) starting from now. True if it was placed."""
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
                self._objects().filter(namespace=row.namespace)
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
                self._objects().filter(namespace=namespace).exclude(pk__in=doomed)
            )
            by_body = {id(c.body): c for c in candidates}
            bodies = [c.body for c in candidates]
            for owner in (row for row in rows if row.namespace == namespace):
                doomed |= {by_body[id(body)].pk for body in dependents(owner.body, bodies)}
        self._objects().filter(pk__in=doomed).delete()
        for row in rows:
            if (row.api_version, row.kind) == ("v1", "Namespace"):
                self._objects().filter(namespace=row.name).delete()

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
