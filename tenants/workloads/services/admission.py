"""Admission: a launch, a scale-up or a VM's start fits the tenant's quota, or is refused.

Checked under the tenant's row lock (`SELECT … FOR UPDATE`, the same discipline as quota
approval), counting every workload that is not deleted: of two launches at once, the second
waits for the first to commit and then counts it, so together they never exceed the quota.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ValidationError

from inventory import resource_classes

from ...access.models import Tenant
from ...quota.models import Quota
from ..models import HOLDING, Workload


def _label(resource: str) -> str:
    try:
        return resource_classes.parse(resource).label
    except resource_classes.UnknownResourceClass:
        return resource


def tenant_lock(*, tenant_id: int) -> Tenant:
    """Lock the tenant row for the rest of the transaction: one admission at a time."""
    return Tenant.objects.select_for_update().get(pk=tenant_id)


def admission_check(
    *, tenant: Tenant, demand: Mapping[str, int], excluding: int | None = None
) -> None:
    """Raise ValidationError({"quota": […]}) naming every class `demand` would take past the
    tenant's quota, on top of what its other workloads hold. Call under `tenant_lock`."""
    limits = dict(Quota.objects.filter(tenant=tenant).values_list("resource", "limit"))
    held: dict[str, int] = {}
    others = Workload.objects.filter(tenant=tenant, status__in=HOLDING)
    if excluding is not None:
        others = others.exclude(pk=excluding)
    for row in others.values_list("demand", flat=True):
        for resource, amount in (row or {}).items():
            held[resource] = held.get(resource, 0) + int(amount)
    problems = []
    for resource, amount in sorted(demand.items()):
        if amount <= 0:
            continue
        limit, in_use = limits.get(resource, 0), held.get(resource, 0)
        if limit == 0:
            problems.append(
                f"{_label(resource)}: your tenant has no quota for it; ask for some on the "
                "quota page."
            )
        elif in_use + amount > limit:
            left = max(0, limit - in_use)
            problems.append(
                f"{_label(resource)}: this needs {amount:,}, and {left:,} of your "
                f"{limit:,} are left ({in_use:,} held by your other workloads)."
            )
    if problems:
        raise ValidationError({"quota": problems})
