"""How much a tenant may hold where: the one place quota per cluster and fleet-wide add up.

A tenant's grant of a resource class is either on one cluster or fleet-wide ("anywhere", the
cluster None). What it holds on a cluster counts first against that cluster's own grant, and
what goes past it against the fleet-wide grant, which every cluster shares. So on cluster C it
may hold up to quota(C) + quota(anywhere), and across the fleet up to Σ quota(C) +
quota(anywhere), and never the fleet-wide grant twice: the parts of each cluster's usage beyond
its own grant together fit the fleet-wide grant.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..access.models import Tenant
from .models import Quota

# {cluster slug, or None for anywhere: {resource class: limit}}
Grants = dict[str | None, dict[str, int]]


def grants_by_cluster(tenant: Tenant | int) -> Grants:
    """The tenant's grants, per cluster (None: fleet-wide), per resource class. One query."""
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    grants: Grants = {}
    rows = Quota.objects.filter(tenant_id=tenant_id).values_list("cluster_id", "resource", "limit")
    for cluster, resource, limit in rows:
        grants.setdefault(cluster, {})[resource] = limit
    return grants


def limits_on(grants: Grants, cluster: str) -> dict[str, int]:
    """The most of each class the tenant may hold on `cluster`: its own grant there plus the
    fleet-wide one (what the cluster's ResourceQuota and Kueue queues enforce)."""
    limits = dict(grants.get(None, {}))
    for resource, limit in grants.get(cluster, {}).items():
        limits[resource] = limits.get(resource, 0) + limit
    return limits


def cluster_limits(tenant: Tenant | int, cluster: str) -> dict[str, int]:
    """`limits_on` the tenant's grants: what it may hold on `cluster`. One query."""
    return limits_on(grants_by_cluster(tenant), cluster)


def fleet_limits(grants: Grants) -> dict[str, int]:
    """The most of each class the tenant may hold across the fleet: every grant summed."""
    totals: dict[str, int] = {}
    for limits in grants.values():
        for resource, limit in limits.items():
            totals[resource] = totals.get(resource, 0) + limit
    return totals


def split_usage(grants: Grants, resource: str, held: Mapping[str, int]) -> dict[str | None, int]:
    """What of `held` (per cluster, of `resource`) each grant covers: every cluster's own
    first, the rest the fleet-wide grant's (over it, where the tenant holds more than it may:
    on the cluster's own grant when it has no fleet-wide one)."""
    anywhere = resource in grants.get(None, {})
    used: dict[str | None, int] = {}
    for cluster, amount in held.items():
        own = grants.get(cluster, {}).get(resource)
        if own is None:
            key, part = (None, amount) if anywhere else (cluster, amount)
            used[key] = used.get(key, 0) + part
            continue
        mine = amount if not anywhere else min(amount, own)
        used[cluster] = used.get(cluster, 0) + mine
        if amount - mine:
            used[None] = used.get(None, 0) + amount - mine
    return used


@dataclass(frozen=True)
class Overrun:
    """One class a launch on `cluster` would take past the tenant's quota."""

    resource: str
    cluster: str
    amount: int
    left: int  # what the tenant may still hold there (its own grant's rest + anywhere's rest)
    own: int  # granted on the cluster itself
    anywhere: int  # granted fleet-wide
    held_here: int  # held by its other workloads on the cluster
    held: int  # held by its other workloads everywhere

    @property
    def limit(self) -> int:
        return self.own + self.anywhere


def overruns(
    grants: Grants,
    held: Mapping[str, Mapping[str, int]],
    *,
    cluster: str,
    demand: Mapping[str, int],
) -> list[Overrun]:
    """Every class of `demand`, launched on `cluster`, that the tenant's quota does not cover
    on top of what it holds (`held`: per cluster, per class). Empty when it fits."""
    problems = []
    for resource, amount in sorted(demand.items()):
        if amount <= 0:
            continue
        own = grants.get(cluster, {}).get(resource, 0)
        anywhere = grants.get(None, {}).get(resource, 0)
        per_cluster = {c: h.get(resource, 0) for c, h in held.items()}
        beyond = sum(max(0, h - grants.get(c, {}).get(resource, 0)) for c, h in per_cluster.items())
        here = per_cluster.get(cluster, 0)
        left = max(0, own - here) + max(0, anywhere - beyond)
        if amount > left:
            problems.append(
                Overrun(
                    resource=resource,
                    cluster=cluster,
                    amount=amount,
                    left=left,
                    own=own,
                    anywhere=anywhere,
                    held_here=here,
                    held=sum(per_cluster.values()),
                )
            )
    return problems


def tenants_clusters(tenant_ids: Iterable[int], in_service: set[str]) -> dict[int, set[str]]:
    """Per tenant, the in-service clusters its quota puts it on: each cluster it has a grant
    on, or every one when it has a fleet-wide grant. One query."""
    ids = list(tenant_ids)
    on: dict[int, set[str]] = {tenant_id: set() for tenant_id in ids}
    rows = (
        Quota.objects.filter(tenant_id__in=ids, limit__gt=0)
        .values_list("tenant_id", "cluster_id")
        .distinct()
    )
    for tenant_id, cluster in rows:
        on[tenant_id] |= in_service if cluster is None else {cluster} & in_service
    return on
