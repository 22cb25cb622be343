"""Reads about tenants, already scoped to what the user may see and already prefetched."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Case, Min, Prefetch, QuerySet, Sum, Value, When
from django.shortcuts import get_object_or_404

from inventory import resource_classes

from .access import tenants_visible_to
from .capacity import ResourceCapacity, fleet_capacity_by_resource_class
from .models import Membership, Quota, QuotaRequest, QuotaRequestLine, Tenant


@dataclass(frozen=True)
class QuotaLine:
    resource: str
    label: str
    limit: int
    used: int
    temporary: int = 0  # part of `limit` granted until `ends_on`
    ends_on: datetime.date | None = None
    borrowing_limit: int | None = None
    lending_limit: int | None = None

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.used / self.limit)) if self.limit else 0

    @property
    def lendable(self) -> bool:
        """Whether a cohort borrows and lends this class (GPUs and MIG partitions only)."""
        return self.resource.startswith(("gpu:", "mig:"))


def tenant_members(*, tenant: Tenant) -> QuerySet[Membership]:
    return tenant.memberships.select_related("user").order_by("role", "user__username")


def _order() -> dict[str, int]:
    return {key: i for i, key in enumerate(resource_classes.all_keys())}


def tenant_quota_lines(*, tenant: Tenant) -> list[QuotaLine]:
    """Granted quota per resource class, in use as the cluster last reported it."""
    temporary = {
        row["resource"]: row
        for row in QuotaRequestLine.objects.filter(
            request__tenant=tenant,
            request__status=QuotaRequest.Status.APPLIED,
            request__ends_on__isnull=False,
        )
        .values("resource")
        .annotate(amount=Sum("approved_amount"), ends_on=Min("request__ends_on"))
        .order_by()
    }
    order = _order()
    lines = [
        QuotaLine(
            resource=q.resource,
            label=q.resource_label,
            limit=q.limit,
            used=q.in_use,
            temporary=min(q.limit, (temporary.get(q.resource) or {}).get("amount") or 0),
            ends_on=(temporary.get(q.resource) or {}).get("ends_on"),
            borrowing_limit=q.borrowing_limit,
            lending_limit=q.lending_limit,
        )
        for q in Quota.objects.filter(tenant=tenant)
    ]
    return sorted(lines, key=lambda line: order.get(line.resource, len(order)))


def tenant_for_dashboard(*, user, slug: str | None) -> Tenant | None:
    """The tenant to show `user`: `slug` if visible, else their first tenant (or None)."""
    visible = tenants_visible_to(user)
    if slug:
        tenant = visible.filter(slug=slug).first()
        if tenant is not None:
            return tenant
    # Where the user works (owner, then member) comes before tenants they only watch.
    rank = Case(
        When(role=Membership.Role.OWNER, then=Value(0)),
        When(role=Membership.Role.MEMBER, then=Value(1)),
        default=Value(2),
    )
    membership = (
        Membership.objects.filter(user=user, tenant__in=visible)
        .select_related("tenant")
        .order_by(rank, "tenant__name")
        .first()
    )
    return membership.tenant if membership else visible.order_by("name").first()


def tenants_for_list(*, user) -> QuerySet[Tenant]:
    """Every tenant `user` may open (all of them for finance and platform admins), by name."""
    return tenants_visible_to(user).order_by("name")


def tenants_of_member(*, user) -> QuerySet[Tenant]:
    return tenants_visible_to(user).filter(memberships__user=user).order_by("name")


# --- quota requests ---------------------------------------------------------------------------


def _with_lines(requests: QuerySet[QuotaRequest]) -> QuerySet[QuotaRequest]:
    return requests.select_related("tenant", "requested_by", "decided_by").prefetch_related(
        Prefetch("lines", queryset=QuotaRequestLine.objects.order_by("id"))
    )


def quota_requests_visible_to(user) -> QuerySet[QuotaRequest]:
    """Quota requests of the tenants `user` may see, lines prefetched, newest first."""
    return _with_lines(QuotaRequest.objects.filter(tenant__in=tenants_visible_to(user)))


def quota_request_get_for_user(*, user, request_id: int) -> QuotaRequest:
    """The request if `user` may see its tenant; missing and forbidden are the same 404."""
    return get_object_or_404(quota_requests_visible_to(user), pk=request_id)


def tenant_quota_requests(*, tenant: Tenant) -> QuerySet[QuotaRequest]:
    return _with_lines(tenant.quota_requests.all()).order_by("-created_at", "-id")


def quota_requests_open() -> QuerySet[QuotaRequest]:
    """Requests waiting for a decision or for the cluster, oldest first (the review queue)."""
    return _with_lines(QuotaRequest.objects.filter(status__in=QuotaRequest.OPEN)).order_by(
        "created_at", "id"
    )


def quota_requests_pending_count() -> int:
    """Requests waiting for a platform admin's decision (the navigation's badge): one COUNT."""
    return QuotaRequest.objects.filter(status=QuotaRequest.Status.SUBMITTED).count()


# --- what a request would do ------------------------------------------------------------------


@dataclass(frozen=True)
class PreviewLine:
    """One resource class of a (prospective) request: the tenant's quota and the fleet's."""

    resource: str
    label: str
    current: int
    in_use: int
    amount: int
    capacity: ResourceCapacity

    @property
    def resulting(self) -> int:
        return self.current + self.amount

    @property
    def free_after(self) -> int | None:
        return self.capacity.free(extra=self.amount)

    @property
    def fits(self) -> bool | None:
        """Whether the fleet's healthy units still cover every grant; None if not measured."""
        free = self.free_after
        return None if free is None else free >= 0

    @property
    def ratio_before(self) -> Decimal | None:
        return self.capacity.ratio()

    @property
    def ratio_after(self) -> Decimal | None:
        return self.capacity.ratio(extra=self.amount)


def quota_preview(*, tenant: Tenant, lines: list[tuple[str, int]]) -> list[PreviewLine]:
    """What granting `lines` (resource, more) would make the tenant's quota and the fleet's."""
    quotas = {q.resource: q for q in Quota.objects.filter(tenant=tenant)}
    capacity = fleet_capacity_by_resource_class()
    preview = []
    for resource, amount in lines:
        if resource not in capacity:
            continue
        quota = quotas.get(resource)
        preview.append(
            PreviewLine(
                resource=resource,
                label=resource_classes.parse(resource).label,
                current=quota.limit if quota else 0,
                in_use=quota.in_use if quota else 0,
                amount=max(0, amount or 0),
                capacity=capacity[resource],
            )
        )
    return preview
