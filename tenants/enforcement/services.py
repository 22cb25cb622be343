"""Quota enforced on each cluster, level-triggered: the database says what should be there.

A tenant is on every in-service cluster where it has quota or live workloads (`presence`);
each (tenant, cluster) is reconciled on its own, from that cluster's Celery queue, so one
cluster that fails or does not answer never holds back another. `tenant_reconcile` builds the
manifests for one cluster from the database (`manifests`; the quota there is the tenant's
grant on that cluster plus its fleet-wide grant), server-side applies them through that
cluster's gateway and records what it observed on that cluster's row: the applied version,
time and objects, or the cluster's error; the usage the cluster reports; drift it corrected.
It deletes the tenant's Kueue queues the last apply there wrote and it no longer wants
(`stale_manifests`), and from a cluster where the tenant no longer belongs, its queues and
namespace (`withdrawal_manifests`). Drift is the cluster differing from the objects the portal
last applied there, so applying a new desired version (an approval) is a change, not a
correction. It is safe to run twice, late or concurrently: apply is idempotent, and the
recorded version only moves forward. `tenants_reconcile_sweep` re-queues every (tenant,
cluster), which both retries failures and repairs drift.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from core.fleet import FleetError, FleetGateway, get_gateway
from core.queueing import enqueue_on_commit
from inventory import resource_classes
from inventory.models import DEFAULT_CLUSTER, Cluster

from ..access.changes import RECONCILE_TENANT
from ..access.models import Tenant
from ..credentials.services import scrub
from ..quota.models import Quota
from ..workloads.models import Workload, WorkloadStatus
from .manifests import (
    EndpointQueue,
    Grant,
    LentFlavor,
    Manifest,
    TenantSpec,
    drifted_paths,
    endpoint_queue,
    stale_manifests,
    tenant_manifests,
    withdrawal_manifests,
)
from .manifests.endpoint_queues import INFERENCE
from .manifests.notebook_sign_in import notebook_oidc_secret_manifest
from .models import TenantCluster
from .observe import observed_lent, observed_usage
from .presence import (
    clusters_wanted,
    reconcile_targets,
    record_failure,
    record_success,
    record_withdrawn,
)

logger = logging.getLogger(__name__)


@dataclass
class ReconcileOutcome:
    tenant_id: int
    version: int
    cluster: str = DEFAULT_CLUSTER
    applied: int = 0
    drift: dict[str, dict[str, Any]] = field(default_factory=dict)
    manifests: list[Manifest] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    # Per GPU and MIG class: what of the usage Kueue reports borrowed from the cohort.
    borrowed: dict[str, int] = field(default_factory=dict)
    # A lender's GPU classes: what the cohort's shared tenants borrow of them now.
    lent: dict[str, int] = field(default_factory=dict)
    requests_applied: list[int] = field(default_factory=list)
    # Objects deleted from a cluster the tenant left (None: it belongs there).
    withdrawn: int | None = None


# --- desired state ----------------------------------------------------------------------------


def _cohort_lending(
    tenant: Tenant, cluster: str
) -> tuple[dict[str, int], tuple[LentFlavor, ...]]:
    """What a shared tenant's cohort lends it on `cluster`: per resource class, the most the
    others lend there (their idle quota), and the dedicated lenders' flavors (their owners
    opted in) of the GPU models it holds. One query for every peer and lender."""
    if not tenant.borrows_from_cohort:
        return {}, ()
    shared = Q(tenant__isolation=Tenant.Isolation.SHARED)
    lender = Q(
        tenant__isolation=Tenant.Isolation.DEDICATED,
        tenant__lends_reserved_gpus=True,
        resource__startswith="gpu:",
    )
    # The peers' grants usable on this cluster: theirs there, and fleet-wide.
    here = Q(cluster_id=cluster) | Q(cluster__isnull=True)
    peers = (
        Quota.objects.filter(shared | lender, here, tenant__cohort=tenant.cohort,
                             tenant__status=Tenant.Status.ACTIVE)
        .exclude(tenant=tenant)
        .order_by("tenant__slug", "resource")
    )
    lendable: dict[str, int] = {}
    lent: list[LentFlavor] = []
    for slug, isolation, resource, limit, lending in peers.values_list(
        "tenant__slug", "tenant__isolation", "resource", "limit", "lending_limit"
    ):
        lendable[resource] = lendable.get(resource, 0) + (limit if lending is None else lending)
        if isolation != Tenant.Isolation.DEDICATED:
            continue
        flavor = LentFlavor(lender=slug, model_key=resource_classes.parse(resource).gpu_model.key)
        if flavor not in lent:  # granted on this cluster and anywhere: one flavor
            lent.append(flavor)
    return lendable, tuple(lent)


def _grants_on(tenant: Tenant, cluster: str) -> tuple[Grant, ...]:
    """The tenant's quota on `cluster`: per class, its grant there plus the fleet-wide one
    (`tenants.quota.limits`), with the borrowing and lending limits summed where set. One
    query."""
    merged: dict[str, Grant] = {}
    rows = tenant.quotas.filter(Q(cluster_id=cluster) | Q(cluster__isnull=True))
    for q in rows.order_by("resource", "cluster_id"):
        before = merged.get(q.resource)
        if before is None:
            merged[q.resource] = Grant(resource=q.resource, limit=q.limit,
                                       borrowing_limit=q.borrowing_limit,
                                       lending_limit=q.lending_limit)
            continue
        merged[q.resource] = Grant(
            resource=q.resource, limit=before.limit + q.limit,
            borrowing_limit=_summed_limit(before.borrowing_limit, q.borrowing_limit),
            lending_limit=_summed_limit(before.lending_limit, q.lending_limit),
        )
    return tuple(merged[resource] for resource in sorted(merged))


def _summed_limit(a: int | None, b: int | None) -> int | None:
    """Two grants' borrowing (or lending) limits together: none (no limit) if either has none."""
    return None if a is None or b is None else a + b


def _endpoint_queues(tenant: Tenant, cluster: str) -> tuple[EndpointQueue, ...]:
    """The tenant's inference endpoints on `cluster` that get a queue of their own (a minimum
    on whole GPUs or MIG), oldest first, until they are deleted (a deleting one's replicas may
    still run). One query, whatever their number."""
    endpoints = (
        Workload.objects.filter(tenant=tenant, kind=INFERENCE, cluster_id=cluster)
        .exclude(status=WorkloadStatus.DELETED)
        .order_by("created_at", "pk")
        .values_list("name", "spec")
    )
    dedicated = tenant.isolation == Tenant.Isolation.DEDICATED
    found = (endpoint_queue(name, spec or {}, dedicated=dedicated) for name, spec in endpoints)
    return tuple(queue for queue in found if queue is not None)


def tenant_spec(*, tenant: Tenant, cluster: str = DEFAULT_CLUSTER) -> TenantSpec:
    """The tenant's desired state on `cluster`, read from the database."""
    grants = _grants_on(tenant, cluster)
    groups = tenant.keycloak_groups(prefix=settings.OIDC_GROUP_PREFIX)
    lendable, lent_flavors = _cohort_lending(tenant, cluster)
    groups_prefix = settings.KUBERNETES_OIDC_GROUPS_PREFIX
    return TenantSpec(
        slug=tenant.slug,
        isolation=tenant.isolation,
        edit_groups=tuple(f"{groups_prefix}{g}" for g in groups["edit"]),
        view_groups=tuple(f"{groups_prefix}{g}" for g in groups["view"]),
        grants=grants,
        suspended=tenant.status == Tenant.Status.SUSPENDED,
        cohort=tenant.cohort,
        lends=tenant.lends_to_cohort,
        cohort_lendable=lendable,
        lent_flavors=lent_flavors,
        endpoint_queues=_endpoint_queues(tenant, cluster),
        priorities=dict(settings.KUEUE_PRIORITIES),
        ingress_namespace=settings.TENANT_INGRESS_NAMESPACE,
        ssh_sources=tuple(settings.SSH_SOURCE_RANGES) if settings.SSH_LOAD_BALANCER else (),
        gateway_namespaces=_gateway_namespaces(),
        edit_role=settings.TENANT_EDIT_CLUSTER_ROLE,
        portal_account=(settings.FLEET_SERVICE_ACCOUNT, settings.FLEET_SERVICE_ACCOUNT_NAMESPACE),
        secrets_role=settings.FLEET_SECRETS_CLUSTER_ROLE,
    )


def _gateway_namespaces() -> tuple[str, ...]:
    """The namespaces of the Gateways that publish the tenant's workloads (inference endpoints,
    notebooks), whose proxies must reach its pods; none where nothing is published."""
    published = ((settings.INFERENCE_GATEWAY, settings.INFERENCE_DOMAIN),
                 (settings.NOTEBOOK_GATEWAY, settings.NOTEBOOK_DOMAIN))
    return tuple(dict.fromkeys(gateway.partition("/")[0] for gateway, domain in published
                               if gateway and domain))


# --- reconcile --------------------------------------------------------------------------------


def _drift_baseline(
    presence: TenantCluster | None, version: int, manifests: list[Manifest]
) -> list[Manifest]:
    """What the cluster should still hold from the last successful apply (empty: nothing yet)."""
    if presence is None:
        return []
    if presence.applied_manifests:
        return presence.applied_manifests
    if presence.applied_version and presence.applied_version >= version:
        # Applied before the portal kept the applied objects, and nothing changed since.
        return manifests
    return []


def _drift(gateway: FleetGateway, applied: list[Manifest]) -> dict[str, dict[str, Any]]:
    drift = {}
    for manifest in applied:
        meta = manifest["metadata"]
        live = gateway.get(
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            name=meta["name"],
            namespace=meta.get("namespace"),
        )
        fields = drifted_paths(manifest, live)
        if fields:
            where = f"{meta['namespace']}/" if meta.get("namespace") else ""
            drift[f"{manifest['kind']} {where}{meta['name']}"] = fields
    return drift


def _remove_stale(gateway: FleetGateway, stale: list[Manifest]) -> None:
    """Delete what the tenant no longer needs (after the apply: a ClusterQueue goes once
    nothing names it). Gone already is done; a failure is retried by the next reconcile, as
    what was last applied still lists it."""
    for manifest in stale:
        meta = manifest["metadata"]
        gateway.delete(api_version=manifest["apiVersion"], kind=manifest["kind"],
                       name=meta["name"], namespace=meta.get("namespace"))


def _apply_notebook_client_secret(gateway: FleetGateway, spec: TenantSpec) -> None:
    """Put the notebooks' sign-in client secret (NOTEBOOK_OIDC_CLIENT_SECRET) in the tenant's
    namespace, where their gateway policies read it; nothing when it is not set. The value is
    never recorded: a refusal is raised without it."""
    secret = settings.NOTEBOOK_OIDC_CLIENT_SECRET
    if not secret:
        return
    try:
        gateway.apply(manifests=[notebook_oidc_secret_manifest(spec, secret)])
    except FleetError as exc:
        raise type(exc)(scrub(exc.message, [secret]), status=exc.status) from None


def tenant_reconcile(
    *, tenant_id: int, cluster: str = DEFAULT_CLUSTER, force: bool = True,
    gateway: FleetGateway | None = None,
) -> ReconcileOutcome:
    """Make `cluster` hold what the database says for one tenant; record what happened there.

    Without `force`, a cluster already in sync is left alone (a change queues one reconcile per
    write; the first applies them all). The sweep forces: that is how drift is found. A cluster
    where the tenant no longer belongs has its objects removed. Raises the gateway's FleetError
    after recording it on that cluster (TransientFleetError is worth a retry).
    """
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return ReconcileOutcome(tenant_id=tenant_id, version=0, cluster=cluster)
    presence = TenantCluster.objects.filter(tenant=tenant, cluster_id=cluster).first()
    if cluster not in clusters_wanted([tenant_id]).get(tenant_id, set()):
        return _withdraw(tenant, cluster, presence, gateway)
    in_sync = presence is not None and not presence.reconcile_error \
        and presence.applied_version >= tenant.desired_version
    if not force and in_sync:
        return ReconcileOutcome(tenant_id=tenant_id, version=presence.applied_version,
                                cluster=cluster)
    # Read the version before the quotas: what gets applied is at least this new.
    version = tenant.desired_version
    spec = tenant_spec(tenant=tenant, cluster=cluster)
    manifests = tenant_manifests(spec)
    outcome = ReconcileOutcome(tenant_id=tenant_id, version=version, cluster=cluster,
                               applied=len(manifests), manifests=manifests)
    try:
        gateway = gateway or get_gateway(cluster)
        baseline = _drift_baseline(presence, version, manifests)
        if baseline:
            outcome.drift = _drift(gateway, baseline)
        gateway.apply(manifests=manifests)
        _apply_notebook_client_secret(gateway, spec)
        previous = presence.applied_manifests if presence else []
        _remove_stale(gateway, stale_manifests(spec, previous or [], manifests))
        try:
            outcome.usage, outcome.borrowed = observed_usage(gateway, spec)
            outcome.lent = observed_lent(gateway, spec)
        except (ValueError, TypeError, AttributeError):
            logger.warning("Unreadable usage for tenant %s on %s", tenant.slug, cluster,
                           exc_info=True)
    except FleetError as exc:
        with transaction.atomic():
            record_failure(tenant_id=tenant_id, cluster=cluster, version=version, error=exc)
        raise
    with transaction.atomic():
        outcome.requests_applied = record_success(
            tenant_id=tenant_id, cluster=cluster, version=version, manifests=manifests,
            usage=outcome.usage, borrowed=outcome.borrowed, lent=outcome.lent,
            drift=outcome.drift,
        )
    return outcome


def _withdraw(tenant: Tenant, cluster: str, presence: TenantCluster | None,
              gateway: FleetGateway | None) -> ReconcileOutcome:
    """Remove the tenant from a cluster where it has neither quota nor live workloads: its
    queues, then its namespace (and all in it). A retired cluster is only forgotten: the
    portal no longer reaches it."""
    outcome = ReconcileOutcome(tenant_id=tenant.pk, version=tenant.desired_version,
                               cluster=cluster, withdrawn=0)
    doomed: list[Manifest] = []
    if presence is not None and Cluster.objects.in_service().filter(slug=cluster).exists():
        spec = tenant_spec(tenant=tenant, cluster=cluster)
        doomed = withdrawal_manifests(spec, presence.applied_manifests or tenant_manifests(spec))
        try:
            _remove_stale(gateway or get_gateway(cluster), doomed)
        except FleetError as exc:
            with transaction.atomic():
                record_failure(tenant_id=tenant.pk, cluster=cluster,
                               version=tenant.desired_version, error=exc)
            raise
    outcome.withdrawn = len(doomed)
    with transaction.atomic():
        record_withdrawn(tenant_id=tenant.pk, cluster=cluster, removed=len(doomed))
    return outcome


def tenant_reconcile_everywhere(
    *, tenant_ids: list[int], force: bool = False, only: str | None = None
) -> list[tuple[int, str]]:
    """Queue one reconcile per cluster each tenant is on, or must leave (`only` that cluster's,
    when named), each to its cluster's queue (after commit). The one place a tenant's
    reconciles are fanned out."""
    targets = [(t, c) for t, c in reconcile_targets(tenant_ids) if only in (None, c)]
    for tenant_id, cluster in targets:
        enqueue_on_commit(RECONCILE_TENANT, tenant_id, force, cluster, cluster=cluster)
    return targets


def tenants_reconcile_sweep(*, cluster: str | None = None) -> list[tuple[int, str]]:
    """Queue a reconcile of every tenant on every cluster it is on or must leave (only on
    `cluster`, when named: one that answers again): retries failures, finishes stuck ones,
    repairs drift, removes what no longer belongs."""
    ids = list(Tenant.objects.order_by("pk").values_list("pk", flat=True))
    return tenant_reconcile_everywhere(tenant_ids=ids, force=True, only=cluster)
