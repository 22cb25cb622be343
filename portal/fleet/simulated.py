"""The demo fleet: Kubernetes objects kept in the database, with controllers played on read.

Apply stores the manifest: its top-level sections replace the stored ones, the server's metadata
is kept, and so is `status` for the kinds a controller owns. Reads give those kinds the status
their controller would report: "progressing" until FLEET_SIMULATED_READY_SECONDS have passed
since the last spec change (`SimulatedObject.updated_at` marks it), ready afterwards.
Unlike SSA, a field dropped from a later manifest stays when its whole section is dropped.
"""

from __future__ import annotations

import copy
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import SimulatedObject
from .base import FleetGateway, Manifest, PermanentFleetError
from .labels import label_selector_matcher
from .simulated_controllers import (
    CONTROLLERS,
    cluster_queue_flavors_usage,
    controller_status,
    is_ready_helm_release,
    resource_quota_used,
    vcluster_kubeconfig_secret,
)

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


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge, None removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _iso(moment: Any) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


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
    def _apply_one(self, manifest: Manifest) -> Manifest:
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
            now = timezone.now()
            applied["metadata"].update(
                uid=str(uuid.uuid4()), creationTimestamp=_iso(now), generation=1
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
            row.updated_at = timezone.now()
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

    def _observe(self, row: SimulatedObject) -> Manifest:
        """Play the kind's controller: write the status it would report by now, if it changed."""
        status = controller_status(
            row.body,
            spec_changed_at=row.updated_at,
            ready_after=timedelta(seconds=settings.FLEET_SIMULATED_READY_SECONDS),
            now=timezone.now(),
        )
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
            if is_ready_helm_release(body):
                self._apply_one(vcluster_kubeconfig_secret(body))
        return _render(row)

    def _with_usage(self, row: SimulatedObject, status: Manifest) -> Manifest:
        """Quota controller and Kueue: count what the pods the demo runs request."""
        if row.kind == "ResourceQuota" and "hard" in status:
            pods = [p.body for p in self._rows("v1", "Pod").filter(namespace=row.namespace)]
            return {**status, "used": resource_quota_used(status["hard"], pods)}
        if row.kind == "ClusterQueue":
            selector = ((row.body.get("spec") or {}).get("namespaceSelector") or {}).get(
                "matchLabels"
            ) or {}
            namespaces = [
                ns.name
                for ns in self._rows("v1", "Namespace")
                if selector
                and all(
                    ((ns.body.get("metadata") or {}).get("labels") or {}).get(k) == v
                    for k, v in selector.items()
                )
            ]
            pods = [p.body for p in self._rows("v1", "Pod").filter(namespace__in=namespaces)]
            nodes = {
                n.name: (n.body.get("metadata") or {}).get("labels") or {}
                for n in self._rows("v1", "Node").filter(
                    name__in={(p.get("spec") or {}).get("nodeName") for p in pods}
                )
            }
            flavors = {
                f.name: (f.body.get("spec") or {}).get("nodeLabels") or {}
                for f in self._rows(row.api_version, "ResourceFlavor")
            }
            placed = [(p, nodes.get((p.get("spec") or {}).get("nodeName"), {})) for p in pods]
            usage = cluster_queue_flavors_usage(row.body, flavors, placed)
            return {**status, "flavorsUsage": usage}
        return status

    def get(
        self, *, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Manifest | None:
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
        deleted, _ = self._rows(api_version, kind).filter(namespace=scope, name=name).delete()
        if deleted and (api_version, kind) == ("v1", "Namespace"):
            # As in a cluster, the namespace's contents go with it.
            SimulatedObject.objects.filter(namespace=name).delete()
        if deleted and kind == "HelmRelease":
            self._rows("v1", "Secret").filter(namespace=scope, name=f"vc-{name}").delete()
        return bool(deleted)

    def list(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Manifest]:
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
