"""Kueue's cohorts seen from the quota: what shared tenants lend each other."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from inventory import resource_classes

from ..access.models import Tenant
from .models import Quota, resource_label


@dataclass(frozen=True)
class CohortLine:
    """One GPU or MIG class in one Kueue cohort: its shared tenants' quota summed."""

    cohort: str
    resource: str
    label: str
    tenants: int
    nominal: int  # the members' quota, which Kueue lends between them while it is idle
    in_use: int  # what the cluster last reported the members use (borrowed included)
    borrowed: int  # of it, beyond a member's own quota: what the others lent

    @property
    def idle(self) -> int:
        """What none of the members uses (what one borrows is another's quota): lendable to
        whichever asks first."""
        return max(0, self.nominal - self.in_use)


def cohort_capacity() -> list[CohortLine]:
    """Per cohort and GPU or MIG class, the members' quota, use and borrowing (as Kueue last
    reported them at each member's reconcile): one query, a row per cohort and class."""
    rows = (
        Quota.objects.filter(
            Q(resource__startswith="gpu:") | Q(resource__startswith="mig:"),
            tenant__isolation=Tenant.Isolation.SHARED,
        )
        .exclude(tenant__cohort="")
        .values("tenant__cohort", "resource")
        .annotate(tenants=Count("tenant_id"), nominal=Sum("limit"), in_use=Sum("in_use"),
                  borrowed=Sum("borrowed"))
        .order_by("tenant__cohort")
    )
    order = resource_classes.key_order()
    lines = [
        CohortLine(cohort=row["tenant__cohort"], resource=row["resource"],
                   label=resource_label(row["resource"]), tenants=row["tenants"],
                   nominal=row["nominal"] or 0, in_use=row["in_use"] or 0,
                   borrowed=row["borrowed"] or 0)
        for row in rows
    ]
    return sorted(lines, key=lambda line: (line.cohort, order.get(line.resource, len(order))))
