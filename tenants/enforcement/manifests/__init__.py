"""What a tenant looks like on the cluster: pure functions from a TenantSpec to manifests.

No ORM and no I/O here: `tenants.enforcement.services` reads the database into a TenantSpec, these
functions turn it into the objects to server-side apply, in an order a fresh cluster accepts
(Namespace first, flavors and cohort before the ClusterQueue that names them, the ClusterQueue
before the LocalQueue that points at it).

Per tenant: Namespace, ResourceQuota, LimitRange, a default-deny NetworkPolicy, a RoleBinding of
the tenant's Keycloak group to `edit`, Kueue ResourceFlavors (one per GPU model, and one for
VMs' passthrough GPUs; dedicated tenants get their own, pinned to their reserved nodes), the
portal's WorkloadPriorityClasses and Kubernetes PriorityClasses of the same names (the same for
every tenant), an optional Cohort, a ClusterQueue (with its preemption rules) and its
LocalQueue, which the tenant's GPU workloads queue in; for a shared tenant holding HAMi shares,
their flavors, ClusterQueue and LocalQueue (`shares`); for each inference endpoint with a
minimum on whole GPUs or MIG, a ClusterQueue and LocalQueue of its own, in a Cohort of the
tenant's (`endpoint_queues`).
"""

from __future__ import annotations

from inventory.node_labels import RESERVED_FOR_KEY

from .core import (
    limit_range_manifest,
    namespace_manifest,
    network_policy_manifest,
    resource_quota_hard,
    resource_quota_manifest,
    role_binding_manifests,
)
from .drift import drifted_fields, drifted_paths
from .endpoint_queues import endpoint_queue, grouped, local_queue_name
from .kueue import (
    borrowable_flavors,
    cluster_queue_manifest,
    cohort_manifest,
    flavor_name,
    local_queue_manifest,
    passthrough_flavor_name,
    pod_priority_class_manifests,
    priority_class_manifests,
    resource_flavor_manifests,
    scheduling_for,
    shares_cluster_queue_name,
    shares_manifests,
)
from .spec import (
    COUNT_RESOURCES,
    KUEUE,
    LOCAL_QUEUE,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    PRIORITY_CLASS_LABEL,
    PRIORITY_CLASSES,
    QUEUE_NAME_LABEL,
    RESOURCE_QUOTA,
    SHARES_LOCAL_QUEUE,
    TENANT_LABEL,
    EndpointQueue,
    Grant,
    LentFlavor,
    Manifest,
    TenantSpec,
    burst_ceiling,
    mig_resource_names,
)


def tenant_manifests(spec: TenantSpec) -> list[Manifest]:
    """Every object the tenant needs, in the order to apply them."""
    manifests = [
        namespace_manifest(spec),
        resource_quota_manifest(spec),
        limit_range_manifest(spec),
        network_policy_manifest(spec),
        *role_binding_manifests(spec),
        *resource_flavor_manifests(spec),
        *priority_class_manifests(spec),
        *pod_priority_class_manifests(spec),
    ]
    cohort = cohort_manifest(spec)
    if cohort is not None:
        manifests.append(cohort)
    # With endpoint queues, the tenant's Cohort, its queue and each endpoint's (endpoint_queues).
    manifests += [*grouped(spec, cluster_queue_manifest(spec)), local_queue_manifest(spec)]
    manifests += shares_manifests(spec)
    return manifests


QUEUE_KINDS = frozenset({(KUEUE, "ClusterQueue"), (KUEUE, "LocalQueue")})


def _key(manifest: Manifest) -> tuple[str, str, str, str]:
    meta = manifest["metadata"]
    return (manifest["apiVersion"], manifest["kind"], meta.get("namespace") or "", meta["name"])


def stale_manifests(spec: TenantSpec, previous: list[Manifest], wanted: list[Manifest]) -> list[
    Manifest
]:
    """The queues the last apply wrote for this tenant (its label) that are no longer wanted,
    in the order to delete them (the reverse of applying): the HAMi shares queues of a tenant
    that lost its HAMi quota. Nothing else is deleted (the portal may delete no other kind of a
    tenant's objects: docs/rbac.md); flavors, priority classes and cohorts stay."""
    keep = {_key(m) for m in wanted}
    return [
        m for m in reversed(previous)
        if (m["apiVersion"], m["kind"]) in QUEUE_KINDS and _key(m) not in keep
        and ((m.get("metadata") or {}).get("labels") or {}).get(TENANT_LABEL) == spec.slug
    ]


def withdrawal_manifests(spec: TenantSpec, applied: list[Manifest]) -> list[Manifest]:
    """What to delete from a cluster the tenant leaves (no quota there, no workloads), in
    order: its queues (a ClusterQueue is cluster-wide), then its namespace, which takes every
    object in it along. Flavors, priority classes and cohorts, which others share, stay."""
    return [
        m for m in reversed(applied)
        if ((m["apiVersion"], m["kind"]) in QUEUE_KINDS or m["kind"] == "Namespace")
        and ((m.get("metadata") or {}).get("labels") or {}).get(TENANT_LABEL) == spec.slug
    ]


__all__ = [
    "COUNT_RESOURCES",
    "KUEUE",
    "LOCAL_QUEUE",
    "MANAGED_BY",
    "MANAGED_BY_LABEL",
    "PRIORITY_CLASSES",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_NAME_LABEL",
    "RESERVED_FOR_KEY",
    "RESOURCE_QUOTA",
    "SHARES_LOCAL_QUEUE",
    "TENANT_LABEL",
    "EndpointQueue",
    "Grant",
    "LentFlavor",
    "Manifest",
    "TenantSpec",
    "borrowable_flavors",
    "burst_ceiling",
    "drifted_fields",
    "drifted_paths",
    "endpoint_queue",
    "flavor_name",
    "local_queue_name",
    "mig_resource_names",
    "passthrough_flavor_name",
    "resource_quota_hard",
    "scheduling_for",
    "shares_cluster_queue_name",
    "stale_manifests",
    "tenant_manifests",
    "withdrawal_manifests",
]
