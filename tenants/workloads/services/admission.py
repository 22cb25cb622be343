"""Admission: a launch, a scale-up or a VM's start fits the tenant's quota, or is refused.

Checked under the tenant's row lock (`SELECT … FOR UPDATE`, the same discipline as quota
approval), counting every workload that is not deleted: of two launches at once, the second
waits for the first to commit and then counts it, so together they never exceed the quota.
Quota per cluster and fleet-wide add up as `tenants.quota.limits` says: a launch on a cluster
fits that cluster's grant plus what is left of the fleet-wide one.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ValidationError

from inventory import resource_classes
from inventory.models import DEFAULT_CLUSTER

from ...access.models import Tenant
from ...quota.limits import Overrun, grants_by_cluster, overruns
from ..in_use import demand_in_use_by_cluster


def _label(resource: str) -> str:
    try:
        return resource_classes.parse(resource).label
    except resource_classes.UnknownResourceClass:
        return resource


def tenant_lock(*, tenant_id: int) -> Tenant:
    """Lock the tenant row for the rest of the transaction: one admission at a time."""
    return Tenant.objects.select_for_update().get(pk=tenant_id)


def _problem(overrun: Overrun, per_cluster: bool) -> str:
    label = _label(overrun.resource)
    if not per_cluster:  # fleet-wide quota only: where it runs makes no difference
        if overrun.limit == 0:
            return f"{label}: your tenant has no quota for it; ask for some on the quota page."
        return (f"{label}: this needs {overrun.amount:,}, and {overrun.left:,} of your "
                f"{overrun.limit:,} are left ({overrun.held:,} held by your other workloads).")
    where = f"cluster {overrun.cluster}"
    if overrun.limit == 0:
        return (f"{label}: your tenant has no quota for it on {where}; ask for some there or "
                "anywhere on the quota page.")
    return (f"{label}: this needs {overrun.amount:,} on {where}, and {overrun.left:,} are left "
            f"there ({overrun.own:,} granted on {overrun.cluster}, {overrun.anywhere:,} "
            f"anywhere; {overrun.held_here:,} held by your other workloads on {overrun.cluster}, "
            f"{overrun.held:,} in all).")


def admission_check(
    *, tenant: Tenant, demand: Mapping[str, int], cluster: str = DEFAULT_CLUSTER,
    excluding: int | None = None,
) -> None:
    """Raise ValidationError({"quota": […]}) naming every class `demand` would take past the
    tenant's quota on `cluster` (its grant there plus the fleet-wide one left), on top of what
    its other workloads hold. Call under `tenant_lock`. Two queries."""
    grants = grants_by_cluster(tenant)
    held = demand_in_use_by_cluster(tenant_id=tenant.pk, excluding=excluding)
    problems = [
        _problem(o, per_cluster=any(o.resource in g for c, g in grants.items() if c))
        for o in overruns(grants, held, cluster=cluster, demand=demand)
    ]
    if problems:
        raise ValidationError({"quota": problems})
