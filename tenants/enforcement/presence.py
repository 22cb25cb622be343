"""Where a tenant's objects should be, and the record of each cluster's reconcile.

A tenant is on every in-service cluster where it has quota (a grant on that cluster, or any
fleet-wide grant) or live workloads; each is a `TenantCluster` row, written by that cluster's
reconcile only. The tenant's own reconcile fields are the roll-up of its clusters' (applied
when every one is, the errors of those failing), so every page and API that shows a tenant's
state on "the cluster" shows it across its clusters. A quota request is applied when every
cluster it concerns (its own, or each of the tenant's for one granted anywhere) has applied
the version that carries it.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q
from django.utils import timezone

from core.audit import audit
from core.fleet import FleetError, TransientFleetError
from core.reconcile import (
    MAX_ERROR_LENGTH,
    ReconcileState,
    reconcile_failed,
    reconcile_succeeded,
)
from inventory.models import DEFAULT_CLUSTER, Cluster

from ..access.models import Tenant
from ..quota.limits import split_usage, tenants_clusters
from ..quota.models import Quota, QuotaRequest
from ..quota.notifications import quota_request_notify
from ..workloads.models import HOLDING, Workload
from .models import TenantCluster

OBSERVED = ("in_use", "borrowed", "lent")


def clusters_wanted(tenant_ids: Iterable[int]) -> dict[int, set[str]]:
    """Per tenant, the in-service clusters its objects must be on: where it has quota, or
    live workloads; a tenant with neither anywhere keeps its namespace on the default cluster
    (its members' place before any grant). Three queries, whatever the number of tenants and
    clusters."""
    ids = list(tenant_ids)
    in_service = set(Cluster.objects.in_service().values_list("slug", flat=True))
    wanted = tenants_clusters(ids, in_service)
    live = (
        Workload.objects.filter(tenant_id__in=ids, status__in=HOLDING)
        .order_by()
        .values_list("tenant_id", "cluster_id")
        .distinct()
    )
    for tenant_id, cluster in live:
        if cluster in in_service:
            wanted.setdefault(tenant_id, set()).add(cluster)
    home = {DEFAULT_CLUSTER} & in_service
    return {tenant_id: wanted.get(tenant_id) or set(home) for tenant_id in ids}


def reconcile_targets(tenant_ids: Iterable[int]) -> list[tuple[int, str]]:
    """Every (tenant, cluster) to reconcile: where each tenant must be, and where it still is
    and must no longer be (to remove it there). Four queries."""
    ids = list(tenant_ids)
    targets = {(t, c) for t, clusters in clusters_wanted(ids).items() for c in clusters}
    targets |= set(
        TenantCluster.objects.filter(tenant_id__in=ids).values_list("tenant_id", "cluster_id")
    )
    return sorted(targets)


def _several(wanted: set[str], rows: Mapping[str, TenantCluster]) -> bool:
    return len(wanted | set(rows)) > 1


def _named(cluster: str, message: str, several: bool) -> str:
    return f"On cluster {cluster}: {message}" if several else message


def _rollup(tenant: Tenant, wanted: set[str], rows: Mapping[str, TenantCluster]) -> None:
    """The tenant's reconcile fields from its clusters' rows (a cluster it must be on without a
    row yet has applied nothing). Saves the tenant, locked by the caller."""
    clusters = sorted(wanted | set(rows))
    several = len(clusters) > 1
    present = [rows[c] for c in clusters if c in rows]
    versions = [rows[c].applied_version if c in rows else 0 for c in clusters]
    tenant.applied_version = min(versions) if versions else tenant.desired_version
    tenant.applied_at = (
        max((r.applied_at for r in present if r.applied_at), default=None) or tenant.applied_at
    )
    errors = [
        _named(r.cluster_id, r.reconcile_error, several) for r in present if r.reconcile_error
    ]
    tenant.reconcile_error = "; ".join(errors)[:MAX_ERROR_LENGTH]
    tenant.reconcile_failed_at = max(
        (r.reconcile_failed_at for r in present if r.reconcile_error and r.reconcile_failed_at),
        default=None,
    )
    tenant.reconcile_failures = max((r.reconcile_failures for r in present), default=0)
    tenant.save(
        update_fields=[
            "applied_version",
            "applied_at",
            "reconcile_error",
            "reconcile_failed_at",
            "reconcile_failures",
        ]
    )


def _locked(tenant_id: int) -> tuple[Tenant | None, set[str], dict[str, TenantCluster]]:
    tenant = Tenant.objects.select_for_update().filter(pk=tenant_id).first()
    if tenant is None:
        return None, set(), {}
    rows = {
        r.cluster_id: r for r in TenantCluster.objects.select_for_update().filter(tenant=tenant)
    }
    return tenant, clusters_wanted([tenant_id]).get(tenant_id, set()), rows


def _spread_observed(tenant: Tenant, rows: Mapping[str, TenantCluster]) -> None:
    """Each grant's in use, borrowed and lent from what its clusters reported: a cluster's
    figure counts against its own grant first, the rest against the fleet-wide one (as
    admission counts), so a class's grants together show the fleet's sum. A class no cluster
    reported keeps its figures."""
    quotas = list(Quota.objects.select_for_update().filter(tenant=tenant))
    grants: dict[str | None, dict[str, int]] = {}
    for quota in quotas:
        grants.setdefault(quota.cluster_id, {})[quota.resource] = quota.limit
    figures: dict[tuple[str | None, str], dict[str, int]] = {}
    for name in OBSERVED:
        per_class: dict[str, dict[str, int]] = {}
        for row in rows.values():
            for resource, seen in (row.observed or {}).items():
                per_class.setdefault(resource, {})[row.cluster_id] = int(seen.get(name, 0))
        for resource, held in per_class.items():
            for key in [q.cluster_id for q in quotas if q.resource == resource]:
                figures.setdefault((key, resource), {})[name] = 0
            for key, amount in split_usage(grants, resource, held).items():
                figures.setdefault((key, resource), {})[name] = amount
    for quota in quotas:
        seen = figures.get((quota.cluster_id, quota.resource))
        if seen is None:
            continue
        now = tuple(seen.get(name, getattr(quota, name)) for name in OBSERVED)
        if now != (quota.in_use, quota.borrowed, quota.lent):
            quota.in_use, quota.borrowed, quota.lent = now
            quota.save(update_fields=list(OBSERVED))


def _observed(
    previous: Mapping[str, Any],
    usage: Mapping[str, int],
    borrowed: Mapping[str, int],
    lent: Mapping[str, int],
) -> dict[str, dict[str, int]]:
    """What the cluster reported now over what it reported before (a class it did not report
    keeps its figures; borrowing is 0 where usage was read without it)."""
    observed = {resource: dict(seen) for resource, seen in (previous or {}).items()}
    for resource, amount in usage.items():
        observed.setdefault(resource, {}).update(in_use=amount, borrowed=borrowed.get(resource, 0))
    for resource, amount in lent.items():
        observed.setdefault(resource, {})["lent"] = amount
    return observed


def record_success(
    *,
    tenant_id: int,
    cluster: str,
    version: int,
    manifests: list,
    usage: Mapping[str, int],
    borrowed: Mapping[str, int],
    lent: Mapping[str, int],
    drift: Mapping[str, Any],
) -> list[int]:
    """Record an apply of `version` on `cluster`; returns the quota requests now applied.
    Call inside a transaction."""
    tenant, wanted, rows = _locked(tenant_id)
    if tenant is None:
        return []
    row = rows.get(cluster) or TenantCluster.objects.create(tenant=tenant, cluster_id=cluster)
    rows[cluster] = row
    row.observed = _observed(row.observed, usage, borrowed, lent)
    row.save(update_fields=["observed"])
    news = reconcile_succeeded(row, version=version, manifests=manifests)
    _spread_observed(tenant, rows)
    _rollup(tenant, wanted, rows)
    if drift:
        audit(
            actor=None,
            action="tenant.drift_corrected",
            obj=tenant,
            tenant=tenant,
            changes={**drift, "cluster": cluster} if _several(wanted, rows) else dict(drift),
        )
    if news:
        audit(
            actor=None,
            action="tenant.applied",
            obj=tenant,
            tenant=tenant,
            changes={"version": version, "objects": len(manifests), "cluster": cluster},
        )
    return _requests_applied(tenant, wanted, rows)


def _requests_applied(
    tenant: Tenant, wanted: set[str], rows: Mapping[str, TenantCluster]
) -> list[int]:
    newest = max((r.applied_version for r in rows.values()), default=0)
    ready = QuotaRequest.objects.filter(
        tenant=tenant,
        status__in=[QuotaRequest.Status.APPROVED, QuotaRequest.Status.FAILED],
        tenant_version__lte=newest,
    )
    applied = []
    for request in ready:
        clusters = wanted if request.cluster_id is None else {request.cluster_id} & wanted
        if any(c not in rows or rows[c].applied_version < request.tenant_version for c in clusters):
            continue
        request.move_to(
            QuotaRequest.Status.APPLIED,
            applied_at=rows_applied_at(rows, clusters),
            last_error="",
            attempts=request.attempts + 1,
        )
        audit(actor=None, action="quota_request.applied", obj=request, tenant=tenant)
        quota_request_notify(request_id=request.pk, event="applied")
        applied.append(request.pk)
    return applied


def rows_applied_at(rows: Mapping[str, TenantCluster], clusters: set[str]):
    return (
        max((rows[c].applied_at for c in clusters if rows[c].applied_at), default=None)
        or timezone.now()
    )


def record_failure(*, tenant_id: int, cluster: str, version: int, error: FleetError) -> None:
    """Record a failed reconcile on `cluster` (its row only; the tenant's roll-up names it),
    and fail the approved requests it holds back. Call inside a transaction."""
    tenant, wanted, rows = _locked(tenant_id)
    if tenant is None:
        return
    row = rows.get(cluster) or TenantCluster.objects.create(tenant=tenant, cluster_id=cluster)
    rows[cluster] = row
    message, first_or_new = reconcile_failed(row, error=error)
    _rollup(tenant, wanted, rows)
    shown = _named(cluster, message, _several(wanted, rows))
    # The requests this cluster holds back: those granted on it, or anywhere (not when the
    # tenant is leaving the cluster: none is waiting for it then).
    pending = (
        QuotaRequest.objects.filter(
            Q(cluster_id=cluster) | Q(cluster__isnull=True),
            tenant=tenant,
            tenant_version__gt=row.applied_version,
        )
        if cluster in wanted
        else QuotaRequest.objects.none()
    )
    # Those already failed keep failing (with the latest error); then the newly approved fail.
    pending.filter(status=QuotaRequest.Status.FAILED).update(
        last_error=shown, attempts=F("attempts") + 1
    )
    for request in pending.filter(status=QuotaRequest.Status.APPROVED):
        request.move_to(QuotaRequest.Status.FAILED, last_error=shown, attempts=request.attempts + 1)
        audit(
            actor=None,
            action="quota_request.failed",
            obj=request,
            tenant=tenant,
            changes={"error": shown, "cluster": cluster},
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
                "cluster": cluster,
                "transient": isinstance(error, TransientFleetError),
            },
        )


def record_withdrawn(*, tenant_id: int, cluster: str, removed: int) -> None:
    """The tenant's objects are gone from `cluster` (or the cluster is retired): forget it
    there. Call inside a transaction."""
    tenant, wanted, rows = _locked(tenant_id)
    if tenant is None:
        return
    row = rows.pop(cluster, None)
    if row is not None:
        row.delete()
        audit(
            actor=None,
            action="tenant.withdrawn",
            obj=tenant,
            tenant=tenant,
            changes={"cluster": cluster, "objects": removed},
        )
    _spread_observed(tenant, rows)
    _rollup(tenant, wanted, rows)
    _requests_applied(tenant, wanted, rows)


@dataclass(frozen=True)
class ClusterPresence:
    """Whether a tenant's objects are applied on one cluster it is on (or must leave)."""

    cluster: str
    state: ReconcileState
    applied_at: datetime.datetime | None
    error: str
    leaving: bool  # no quota and no workloads there any more: its objects are being removed

    @property
    def state_label(self) -> str:
        return "Being removed" if self.leaving else self.state.label

    @property
    def state_color(self) -> str:
        return ReconcileState.color(self.state)


def tenant_presence(tenant: Tenant) -> list[ClusterPresence]:
    """Per cluster the tenant is on or must leave, whether its objects are applied there, and
    the error if not. Four queries."""
    wanted = clusters_wanted([tenant.pk]).get(tenant.pk, set())
    rows = {
        r.cluster_id: r
        for r in TenantCluster.objects.filter(tenant=tenant).defer("applied_manifests", "observed")
    }
    shown = []
    for cluster in sorted(wanted | set(rows)):
        row = rows.get(cluster)
        state = row.state(tenant.desired_version) if row else ReconcileState.APPLYING
        shown.append(ClusterPresence(
            cluster=cluster, state=state, applied_at=row.applied_at if row else None,
            error=row.reconcile_error if row else "", leaving=cluster not in wanted,
        ))
    return shown
