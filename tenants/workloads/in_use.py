"""What "in use" means on every page: what the tenants' workloads hold of each resource class
(every workload not deleted, its demand as launched or last resized). The tenant dashboard, the
quota page, a quota request's preview, the admin review and the fleet's capacity all read it
from here; where the cluster's own figure (a ResourceQuota's status, the pods a cluster sync
saw) differs, the pages show it beside this one, each labelled.

Reads the workloads' table only (models), so the quota's capacity module, beneath the workload
selectors, may read it too.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, QuerySet

from .models import HOLDING, Workload

IN_USE_WORDS = "held by workloads"


def _summed(rows) -> dict[str, int]:
    sums: dict[str, int] = {}
    for demand, count in rows:
        if not isinstance(demand, dict):
            continue
        for resource, amount in demand.items():
            sums[resource] = sums.get(resource, 0) + int(amount) * count
    return sums


def _shapes(workloads: QuerySet[Workload]) -> QuerySet:
    """The workloads that hold (every one not deleted) grouped by their demand document."""
    return workloads.filter(status__in=HOLDING).order_by().annotate(n=Count("pk"))


def demand_in_use(*, tenant_ids: list[int] | None) -> dict[int, dict[str, int]]:
    """Per tenant (of `tenant_ids`, or every tenant for None), what its workloads hold of each
    resource class (every one not deleted). One query whatever the number of tenants.

    The database groups the workloads by their demand document and counts each: workloads of
    a tenant are launched from a few shapes, so a tenant running 300 reads a row per shape
    (its 300 documents are neither sent nor expanded key by key), and Python multiplies."""
    if tenant_ids is not None and not tenant_ids:
        return {}
    workloads = Workload.objects.all()
    if tenant_ids is not None:
        workloads = workloads.filter(tenant_id__in=tenant_ids)
    by_tenant: dict[int, list] = defaultdict(list)
    for tenant_id, demand, count in _shapes(workloads.values("tenant_id", "demand")).values_list(
        "tenant_id", "demand", "n"
    ):
        by_tenant[tenant_id].append((demand, count))
    return {tenant_id: _summed(shapes) for tenant_id, shapes in by_tenant.items()}


def demand_in_use_by_class() -> dict[str, int]:
    """The whole fleet's: what every tenant's workloads hold of each resource class (GPUs,
    partitions, vCPUs, memory...). One query, a row per distinct demand document."""
    return _summed(_shapes(Workload.objects.values("demand")).values_list("demand", "n"))


def demand_held_by_cluster(*, workloads: QuerySet[Workload]) -> dict[str, dict[str, int]]:
    """Per cluster (slug), what `workloads` hold of each resource class (those not deleted).
    One query, a row per cluster and distinct demand document."""
    by_cluster: dict[str, list] = defaultdict(list)
    rows = _shapes(workloads.values("cluster_id", "demand")).values_list(
        "cluster_id", "demand", "n"
    )
    for cluster, demand, count in rows:
        by_cluster[cluster].append((demand, count))
    return {cluster: _summed(shapes) for cluster, shapes in by_cluster.items()}


def demand_in_use_by_cluster(
    *, tenant_id: int, excluding: int | None = None
) -> dict[str, dict[str, int]]:
    """Per cluster (its slug), what the tenant's workloads hold of each resource class there
    (every one not deleted but `excluding`). One query."""
    workloads = Workload.objects.filter(tenant_id=tenant_id)
    if excluding is not None:
        workloads = workloads.exclude(pk=excluding)
    return demand_held_by_cluster(workloads=workloads)
