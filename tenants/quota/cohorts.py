"""Kueue's cohorts seen from the quota: what shared tenants lend each other, and the reserved
GPUs dedicated tenants lend them (their owners opted in)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from inventory import resource_classes

from ..access.models import Tenant
from .models import Quota, resource_label


@dataclass(frozen=True)
class CohortLine:
    """One GPU or MIG class in one Kueue cohort: its members' quota summed (the shared tenants'
    and the reserved GPUs of the dedicated tenants that lend)."""

    cohort: str
    resource: str
    label: str
    tenants: int
    nominal: int  # the members' quota, which Kueue lends between them while it is idle
    in_use: int  # what the cluster last reported the members use (borrowed included)
    borrowed: int  # of it, beyond a member's own quota: what the others lent
    reserved: int = 0  # of the quota, dedicated tenants' reserved GPUs they lend when idle
    lent: int = 0  # of those, what shared members borrow now

    @property
    def idle(self) -> int:
        """What none of the members uses (what one borrows is another's quota): lendable to
        whichever asks first."""
        return max(0, self.nominal - self.in_use)


def cohort_capacity() -> list[CohortLine]:
    """Per cohort and GPU or MIG class, the members' quota, use and borrowing (as Kueue last
    reported them at each member's reconcile), lending dedicated tenants' reserved GPUs among
    them: one query, a row per cohort and class."""
    lender = Q(tenant__isolation=Tenant.Isolation.DEDICATED, tenant__lends_reserved_gpus=True)
    rows = (
        Quota.objects.filter(
            Q(resource__startswith="gpu:", tenant__isolation=Tenant.Isolation.SHARED)
            | Q(resource__startswith="mig:", tenant__isolation=Tenant.Isolation.SHARED)
            | Q(lender, resource__startswith="gpu:"),
        )
        .exclude(tenant__cohort="")
        .values("tenant__cohort", "resource")
        .annotate(tenants=Count("tenant_id"), nominal=Sum("limit"), in_use=Sum("in_use"),
                  borrowed=Sum("borrowed"), reserved=Sum("limit", filter=lender),
                  lent=Sum("lent", filter=lender))
        .order_by("tenant__cohort")
    )
    order = resource_classes.key_order()
    lines = [
        CohortLine(cohort=row["tenant__cohort"], resource=row["resource"],
                   label=resource_label(row["resource"]), tenants=row["tenants"],
                   nominal=row["nominal"] or 0, in_use=row["in_use"] or 0,
                   borrowed=row["borrowed"] or 0, reserved=row["reserved"] or 0,
                   lent=row["lent"] or 0)
        for row in rows
    ]
    return sorted(lines, key=lambda line: (line.cohort, order.get(line.resource, len(order))))
