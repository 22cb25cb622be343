"""Quota enforced on the cluster, level-triggered: the database says what should be there.

`tenant_reconcile` builds every manifest from the database (`manifests`), server-side applies
them through the fleet gateway and records what it observed: the applied version, time and
objects, or the cluster's error; the usage the cluster reports; drift it corrected. It deletes
the tenant's Kueue queues the last apply wrote and it no longer wants (`stale_manifests`). Drift is
the cluster differing from the objects the portal last applied, so applying a new desired
version (an approval) is a change, not a correction. It is safe to run twice, late or
concurrently: apply is idempotent, and the recorded version only moves forward.
`tenants_reconcile_sweep` re-queues every tenant, which both retries failures and repairs drift.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from kubernetes.utils.quantity import parse_quantity

from core.audit import audit
from core.fleet import FleetError, FleetGateway, TransientFleetError, get_gateway
from core.queueing import enqueue_on_commit
from core.reconcile import reconcile_failed, reconcile_succeeded
from inventory import resource_classes
from inventory.models import DEFAULT_CLUSTER

from ..access.changes import RECONCILE_TENANT
from ..access.models import Tenant
from ..credentials.services import scrub
from ..quota.models import Quota, QuotaRequest
from ..quota.notifications import quota_request_notify
from ..workloads.models import Workload, WorkloadStatus
from .manifests import (
    COUNT_RESOURCES,
    KUEUE,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    RESOURCE_QUOTA,
    TENANT_LABEL,
    EndpointQueue,
    Grant,
    LentFlavor,
    Manifest,
    TenantSpec,
    borrowable_flavors,
    drifted_paths,
    endpoint_queue,
    flavor_name,
    passthrough_flavor_name,
    stale_manifests,
    tenant_manifests,
)
from .manifests.endpoint_queues import INFERENCE
from .manifests.notebook_sign_in import notebook_oidc_secret_manifest

logger = logging.getLogger(__name__)

GIB = 2**30


@dataclass
class ReconcileOutcome:
    tenant_id: int
    version: int
    applied: int = 0
    drift: dict[str, dict[str, Any]] = field(default_factory=dict)
    manifests: list[Manifest] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    # Per GPU and MIG class: what of the usage Kueue reports borrowed from the cohort.
    borrowed: dict[str, int] = field(default_factory=dict)
    # A lender's GPU classes: what the cohort's shared tenants borrow of them now.
    lent: dict[str, int] = field(default_factory=dict)
    requests_applied: list[int] = field(default_factory=list)


# --- desired state ----------------------------------------------------------------------------


def _cohort_lending(tenant: Tenant) -> tuple[dict[str, int], tuple[LentFlavor, ...]]:
    """What a shared tenant's cohort lends it: per resource class, the most the others lend
    (their idle quota), and the dedicated lenders' flavors (their owners opted in) of the GPU
    models it holds. One query for every peer and lender, whatever their number."""
    if not tenant.borrows_from_cohort:
        return {}, ()
    shared = Q(tenant__isolation=Tenant.Isolation.SHARED)
    lender = Q(
        tenant__isolation=Tenant.Isolation.DEDICATED,
        tenant__lends_reserved_gpus=True,
        resource__startswith="gpu:",
    )
    peers = (
        Quota.objects.filter(shared | lender, tenant__cohort=tenant.cohort,
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
        if isolation == Tenant.Isolation.DEDICATED:
            lent.append(LentFlavor(lender=slug, model_key=resource_classes.parse(resource)
                                   .gpu_model.key))
    return lendable, tuple(lent)


def _endpoint_queues(tenant: Tenant) -> tuple[EndpointQueue, ...]:
    """The tenant's inference endpoints that get a queue of their own (a minimum on whole GPUs
    or MIG), oldest first, until they are deleted (a deleting one's replicas may still run).
    One query, whatever their number."""
    endpoints = (
        Workload.objects.filter(tenant=tenant, kind=INFERENCE)
        .exclude(status=WorkloadStatus.DELETED)
        .order_by("created_at", "pk")
        .values_list("name", "spec")
    )
    dedicated = tenant.isolation == Tenant.Isolation.DEDICATED
    found = (endpoint_queue(name, spec or {}, dedicated=dedicated) for name, spec in endpoints)
    return tuple(queue for queue in found if queue is not None)


def tenant_spec(*, tenant: Tenant) -> TenantSpec:
    """The tenant's desired state on the cluster, read from the database."""
    grants = tuple(
        Grant(
            resource=q.resource,
            limit=q.limit,
            borrowing_limit=q.borrowing_limit,
            lending_limit=q.lending_limit,
        )
        for q in tenant.quotas.order_by("resource")
    )
    groups = tenant.keycloak_groups(prefix=settings.OIDC_GROUP_PREFIX)
    lendable, lent_flavors = _cohort_lending(tenant)
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
        endpoint_queues=_endpoint_queues(tenant),
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


def _drift_baseline(tenant: Tenant, version: int, manifests: list[Manifest]) -> list[Manifest]:
    """What the cluster should still hold from the last successful apply (empty: nothing yet)."""
    if tenant.applied_manifests:
        return tenant.applied_manifests
    if tenant.applied_version and tenant.applied_version >= version:
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


def _whole(quantity: str, unit: int = 1) -> int:
    return max(0, math.ceil(parse_quantity(quantity) / unit))


def _observed_usage(
    gateway: FleetGateway, spec: TenantSpec
) -> tuple[dict[str, int], dict[str, int]]:
    """What the tenant uses now, per resource class, as the cluster's controllers report it;
    and per GPU and MIG class what of it Kueue counts as borrowed from the cohort."""
    quota = gateway.get(
        api_version="v1", kind="ResourceQuota", name=RESOURCE_QUOTA, namespace=spec.namespace
    )
    # Its own queue and its endpoints' (and its HAMi shares', which no flavor below matches).
    queues = gateway.list(api_version=KUEUE, kind="ClusterQueue",
                          label_selector=f"{TENANT_LABEL}={spec.slug}")
    used = ((quota or {}).get("status") or {}).get("used") or {}
    usage: dict[str, int] = {}
    scalars = {"cpu": ("requests.cpu", 1), "memory-gib": ("requests.memory", GIB)}
    scalars["storage-gib"] = ("requests.storage", GIB)
    for key, (name, unit) in scalars.items():
        if name in used:
            usage[key] = _whole(used[name], unit)
    for kind, name in COUNT_RESOURCES.items():
        if name in used:
            usage[f"count:{kind}"] = _whole(used[name])
    # Per GPU model only Kueue can tell (one flavor per model; a VM's passthrough GPUs, one
    # resource per model); ResourceQuota sums all models.
    granted = [resource_classes.parse(g.resource) for g in spec.grants]
    # (flavor, resource) → (its class, the tenant's nominal quota of it over all its queues).
    by_resource: dict[tuple[str, str], tuple[str, int]] = {}
    for rc, grant in zip(granted, spec.grants, strict=True):
        if rc.kind in {"gpu", "mig"}:
            flavor = flavor_name(spec, rc.gpu_model.key)
            by_resource[(flavor, rc.kubernetes_resource)] = (rc.key, grant.limit)
        if passthrough := resource_classes.PASSTHROUGH_RESOURCES.get(
            rc.gpu_model.key if rc.kind == "gpu" else ""
        ):
            by_resource[(passthrough_flavor_name(spec), passthrough)] = (rc.key, grant.limit)
    for lent in borrowable_flavors(spec):  # all it holds there is borrowed from a lender
        flavor = flavor_name(TenantSpec(slug=lent.lender, isolation="dedicated"), lent.model_key)
        by_resource[(flavor, resource_classes.GPU_RESOURCE)] = (
            resource_classes.gpu_class(lent.model_key), 0)
    reports = [q["status"]["flavorsUsage"] for q in queues
               if (q.get("status") or {}).get("flavorsUsage") is not None]
    borrowed: dict[str, int] = {}
    if reports:
        # Summed over its queues: what they borrow of each other is not borrowed from others.
        totals: dict[tuple[str, str], int] = {}
        for flavor in (flavor for report in reports for flavor in report):
            for cell in flavor.get("resources") or []:
                where = (flavor.get("name"), cell.get("name"))
                if where in by_resource:
                    totals[where] = totals.get(where, 0) + _whole(cell.get("total") or "0")
        for where, total in totals.items():
            key, nominal = by_resource[where]
            usage[key] = usage.get(key, 0) + total
            borrowed[key] = borrowed.get(key, 0) + max(0, total - nominal)
    else:
        # With HAMi shares, `requests.nvidia.com/gpu` also counts their vGPUs.
        has_hami = any(rc.kind == "hami" for rc in granted)
        for rc in granted:
            name = f"requests.{rc.kubernetes_resource}"
            same = [o for o in granted if o.kubernetes_resource == rc.kubernetes_resource]
            if rc.kubernetes_resource == resource_classes.GPU_RESOURCE and has_hami:
                continue
            if rc.kind in {"gpu", "mig"} and len(same) == 1 and name in used:
                usage[rc.key] = _whole(used[name])
    # HAMi shares: the ResourceQuota's namespace-wide figure, per model only if one is granted.
    for rc in granted:
        name = f"requests.{rc.kubernetes_resource}"
        same = [o for o in granted if o.kubernetes_resource == rc.kubernetes_resource]
        if rc.kind == "hami" and len(same) == 1 and name in used:
            unit = resource_classes.MIB_PER_GIB if rc.hami_counter == "memory-gib" else 1
            usage[rc.key] = _whole(used[name], unit)
    return usage, borrowed


def _observed_lent(gateway: FleetGateway, spec: TenantSpec) -> dict[str, int]:
    """A dedicated tenant's GPU classes: what the other tenants' ClusterQueues report in use
    of its flavors (Kueue reports borrowing in the borrower's status, not the lender's); 0 each
    when it does not lend. One list of the portal's ClusterQueues, for lenders only."""
    if not spec.dedicated:
        return {}
    flavors = {
        flavor_name(spec, resource_classes.parse(g.resource).gpu_model.key): g.resource
        for g in spec.grants
        if g.resource.startswith("gpu:")
    }
    lent = dict.fromkeys(flavors.values(), 0)
    if not spec.lends:
        return lent
    queues = gateway.list(api_version=KUEUE, kind="ClusterQueue",
                          label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}")
    for queue in queues:
        if ((queue["metadata"].get("labels") or {}).get(TENANT_LABEL)) == spec.slug:
            continue  # its own queues (its endpoints' too) lend nothing to themselves
        for flavor in ((queue.get("status") or {}).get("flavorsUsage")) or []:
            key = flavors.get(flavor.get("name"))
            if key is None:
                continue
            for cell in flavor.get("resources") or []:
                if cell.get("name") == resource_classes.GPU_RESOURCE:
                    lent[key] += _whole(cell.get("total") or "0")
    return lent


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
    *, tenant_id: int, force: bool = True, gateway: FleetGateway | None = None
) -> ReconcileOutcome:
    """Make the cluster hold what the database says for one tenant; record what happened.

    Without `force`, a tenant already in sync is left alone (a change queues one reconcile per
    write; the first applies them all). The sweep forces: that is how drift is found.
    Raises the gateway's FleetError after recording it (TransientFleetError is worth a retry).
    """
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return ReconcileOutcome(tenant_id=tenant_id, version=0)  # gone: nothing to enforce
    if not force and tenant.in_sync:
        return ReconcileOutcome(tenant_id=tenant_id, version=tenant.applied_version, applied=0)
    # Read the version before the quotas: what gets applied is at least this new.
    version = tenant.desired_version
    spec = tenant_spec(tenant=tenant)
    manifests = tenant_manifests(spec)
    gateway = gateway or get_gateway(DEFAULT_CLUSTER)
    outcome = ReconcileOutcome(
        tenant_id=tenant_id, version=version, applied=len(manifests), manifests=manifests
    )
    try:
        baseline = _drift_baseline(tenant, version, manifests)
        if baseline:
            outcome.drift = _drift(gateway, baseline)
        gateway.apply(manifests=manifests)
        _apply_notebook_client_secret(gateway, spec)
        _remove_stale(gateway, stale_manifests(spec, tenant.applied_manifests or [], manifests))
        try:
            outcome.usage, outcome.borrowed = _observed_usage(gateway, spec)
            outcome.lent = _observed_lent(gateway, spec)
        except (ValueError, TypeError, AttributeError):
            logger.warning("Unreadable usage for tenant %s", tenant.slug, exc_info=True)
    except FleetError as exc:
        _record_failure(tenant_id=tenant_id, version=version, error=exc)
        raise
    outcome.requests_applied = _record_success(outcome)
    return outcome


@transaction.atomic
def _record_success(outcome: ReconcileOutcome) -> list[int]:
    now = timezone.now()
    tenant = Tenant.objects.select_for_update().get(pk=outcome.tenant_id)
    news = reconcile_succeeded(tenant, version=outcome.version, manifests=outcome.manifests)
    observed = [*outcome.usage, *outcome.lent]
    for quota in Quota.objects.filter(tenant=tenant, resource__in=observed):
        seen = quota.resource in outcome.usage
        in_use = outcome.usage.get(quota.resource, quota.in_use)
        borrowed = outcome.borrowed.get(quota.resource, 0) if seen else quota.borrowed
        lent = outcome.lent.get(quota.resource, quota.lent)
        if (quota.in_use, quota.borrowed, quota.lent) != (in_use, borrowed, lent):
            quota.in_use, quota.borrowed, quota.lent = in_use, borrowed, lent
            quota.save(update_fields=["in_use", "borrowed", "lent"])
    if outcome.drift:
        audit(
            actor=None,
            action="tenant.drift_corrected",
            obj=tenant,
            tenant=tenant,
            changes=outcome.drift,
        )
    if news:
        audit(
            actor=None,
            action="tenant.applied",
            obj=tenant,
            tenant=tenant,
            changes={"version": outcome.version, "objects": outcome.applied},
        )
    applied = []
    ready = QuotaRequest.objects.filter(
        tenant=tenant,
        status__in=[QuotaRequest.Status.APPROVED, QuotaRequest.Status.FAILED],
        tenant_version__lte=tenant.applied_version,
    )
    for request in ready:
        request.move_to(
            QuotaRequest.Status.APPLIED,
            applied_at=now,
            last_error="",
            attempts=request.attempts + 1,
        )
        audit(actor=None, action="quota_request.applied", obj=request, tenant=tenant)
        quota_request_notify(request_id=request.pk, event="applied")
        applied.append(request.pk)
    return applied


@transaction.atomic
def _record_failure(*, tenant_id: int, version: int, error: FleetError) -> None:
    tenant = Tenant.objects.select_for_update().filter(pk=tenant_id).first()
    if tenant is None:
        return
    message, first_or_new = reconcile_failed(tenant, error=error)
    pending = QuotaRequest.objects.filter(tenant=tenant, tenant_version__gt=tenant.applied_version)
    # Those already failed keep failing (with the latest error); then the newly approved fail.
    pending.filter(status=QuotaRequest.Status.FAILED).update(
        last_error=message, attempts=F("attempts") + 1
    )
    for request in pending.filter(status=QuotaRequest.Status.APPROVED):
        request.move_to(
            QuotaRequest.Status.FAILED, last_error=message, attempts=request.attempts + 1
        )
        audit(
            actor=None,
            action="quota_request.failed",
            obj=request,
            tenant=tenant,
            changes={"error": message},
        )
    if first_or_new:
        audit(
            actor=None,
            action="tenant.apply_failed",
            obj=tenant,
            tenant=tenant,
            changes={
                "version": version,
                "error": message,
                "transient": isinstance(error, TransientFleetError),
            },
        )


def tenants_reconcile_sweep() -> list[int]:
    """Queue a reconcile of every tenant: retries failures, finishes stuck ones, repairs drift."""
    ids = list(Tenant.objects.order_by("pk").values_list("pk", flat=True))
    for tenant_id in ids:
        enqueue_on_commit(RECONCILE_TENANT, tenant_id, True)
    return ids
