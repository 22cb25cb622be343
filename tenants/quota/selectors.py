"""Reads about quota and quota requests, already scoped to what the user may see and already
prefetched."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Min, OuterRef, Prefetch, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from core.list_subquery import ListSubquery
from core.models import AuditEvent
from inventory import resource_classes

from ..access.models import Tenant
from ..access.rules import in_tenants_visible_to
from ..workloads.selectors import demand_in_use
from .capacity import (
    ResourceCapacity,
    pool_capacity_by_resource_class,
    pool_of,
    tenant_capacity_by_resource_class,
)
from .models import Quota, QuotaRequest, QuotaRequestLine, resource_label


@dataclass(frozen=True)
class QuotaLine:
    resource: str
    label: str
    limit: int
    used: int  # held by the tenant's workloads (every one not deleted)
    temporary: int = 0  # part of `limit` granted until `ends_on`
    ends_on: datetime.date | None = None
    borrowing_limit: int | None = None
    lending_limit: int | None = None
    cluster_used: int | None = None  # what the cluster last reported in use, when it differs
    borrowed: int = 0  # of what is in use, borrowed from the cohort (as Kueue last reported)
    lent: int = 0  # a lender's: what the cohort's shared tenants borrow of it (as Kueue reported)

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.used / self.limit)) if self.limit else 0

    @property
    def lendable(self) -> bool:
        """Whether a cohort borrows and lends this class (GPUs and MIG partitions only)."""
        return self.resource.startswith(("gpu:", "mig:"))

    @property
    def whole_gpus(self) -> bool:
        """Whole GPUs: what a dedicated tenant lends its cohort (it has no MIG partitions)."""
        return self.resource.startswith("gpu:")


def tenant_quota_lines(*, tenant: Tenant) -> list[QuotaLine]:
    """Granted quota per resource class; in use is what the tenant's workloads hold, with the
    cluster's own last figure beside it where the two differ (pods run outside the portal, or
    a workload still starting). Two queries."""
    held = demand_in_use(tenant_ids=[tenant.pk]).get(tenant.pk, {})
    temporary = QuotaRequestLine.objects.filter(
        request__tenant=tenant, request__status=QuotaRequest.Status.APPLIED,
        request__ends_on__isnull=False, resource=OuterRef("resource"),
    ).order_by().values("resource")
    rows = Quota.objects.filter(tenant=tenant).values_list(
        "resource", "limit", "in_use", "borrowed", "lent", "borrowing_limit", "lending_limit",
        Subquery(temporary.annotate(amount=Sum("approved_amount")).values("amount")),
        Subquery(temporary.annotate(ends_on=Min("request__ends_on")).values("ends_on")),
    )
    order = resource_classes.key_order()
    lines = []
    for resource, limit, in_use, borrowed, lent, borrowing, lending, temporary, ends_on in rows:
        used = held.get(resource, 0)
        lines.append(QuotaLine(
            resource=resource,
            label=resource_label(resource),
            limit=limit,
            used=used,
            cluster_used=in_use if in_use != used else None,
            temporary=min(limit, temporary or 0),
            ends_on=ends_on,
            borrowing_limit=borrowing,
            lending_limit=lending,
            borrowed=borrowed,
            lent=lent,
        ))
    return sorted(lines, key=lambda line: order.get(line.resource, len(order)))


def grants_by_cluster(tenant: Tenant) -> dict[str | None, dict[str, int]]:
    """What `tenant` was granted, by where: {cluster slug, or None for fleet-wide: {resource
    class: limit}}. On one cluster a tenant may hold that cluster's grant plus the fleet-wide
    one. Every grant is fleet-wide so far. One query."""
    return {None: dict(Quota.objects.filter(tenant=tenant).values_list("resource", "limit"))}


@dataclass(frozen=True)
class SchedulableLine:
    """A tenant's quota of one measured class against what its pool can actually run."""

    resource: str
    label: str
    limit: int
    capacity: ResourceCapacity

    @property
    def beyond_capacity(self) -> int:
        """How much of the quota no healthy unit of the pool could run."""
        return self.capacity.unschedulable(quota=self.limit) or 0

    @property
    def schedulable(self) -> int:
        """The most of its quota the tenant can have running now (0 when nothing is healthy)."""
        return self.limit - self.beyond_capacity


def tenant_schedulable(*, tenant: Tenant) -> list[SchedulableLine]:
    """Per granted class the inventory measures: quota, and the healthy units of the tenant's
    pool (its reserved nodes if dedicated, the shared pool if shared). Five queries."""
    capacity = tenant_capacity_by_resource_class(tenant=tenant)
    order = resource_classes.key_order()
    lines = [
        SchedulableLine(
            resource=q.resource,
            label=capacity[q.resource].label,
            limit=q.limit,
            capacity=capacity[q.resource],
        )
        for q in Quota.objects.filter(tenant=tenant)
        if q.resource in capacity and capacity[q.resource].measured
    ]
    return sorted(lines, key=lambda line: order.get(line.resource, len(order)))


# --- quota requests ---------------------------------------------------------------------------


def _with_lines(requests: QuerySet[QuotaRequest]) -> QuerySet[QuotaRequest]:
    return requests.select_related("tenant", "requested_by", "decided_by").prefetch_related(
        Prefetch("lines", queryset=QuotaRequestLine.objects.order_by("id"))
    )


def quota_requests_visible_to(user) -> QuerySet[QuotaRequest]:
    """Quota requests of the tenants `user` may see, lines prefetched, newest first."""
    return _with_lines(in_tenants_visible_to(QuotaRequest.objects.all(), user))


def quota_requests_listed_to(user) -> QuerySet[QuotaRequest]:
    """`quota_requests_visible_to(user)` with the columns the API's list shows of a request,
    its tenant, its people and its lines."""
    lines = QuotaRequestLine.objects.order_by("id").only("request", *QUOTA_LINE_API_FIELDS)
    return (
        in_tenants_visible_to(QuotaRequest.objects.all(), user)
        .select_related("tenant", "requested_by", "decided_by")
        .only(*QUOTA_REQUEST_API_FIELDS)
        .prefetch_related(Prefetch("lines", queryset=lines))
    )


# What the API shows of a request and of its lines (QuotaRequestSerializer).
QUOTA_REQUEST_API_FIELDS = (
    "tenant__slug", "requested_by__username", "decided_by__username", "status",
    "justification", "ends_on", "created_at", "decided_at", "decision_note", "applied_at",
    "last_error", "attempts",
)
QUOTA_LINE_API_FIELDS = ("resource", "amount", "approved_amount", "limit_before", "limit_after")


def quota_request_get_for_user(*, user, request_id: int) -> QuotaRequest:
    """The request if `user` may see its tenant; missing and forbidden are the same 404."""
    return get_object_or_404(quota_requests_visible_to(user), pk=request_id)


def tenant_quota_requests(*, tenant: Tenant) -> QuerySet[QuotaRequest]:
    return _with_lines(tenant.quota_requests.all()).order_by("-created_at", "-id")


def tenant_quota_requests_recent(*, tenant: Tenant, limit: int) -> list[QuotaRequest]:
    """The tenant's latest requests with what a summary shows of them (the dashboard's card):
    status, dates, who asked (`requested_by`, its names only) and what each line grants
    (`line_resources` and `line_granted`, in the order asked); not the decision or the
    cluster's progress. One query."""
    lines = QuotaRequestLine.objects.filter(request=OuterRef("pk")).order_by("id")
    return list(
        tenant.quota_requests.order_by("-created_at", "-id")
        .select_related("requested_by")
        .only("tenant_id", "status", "created_at", "ends_on", "requested_by__username",
              "requested_by__first_name", "requested_by__last_name")
        .annotate(
            line_resources=ListSubquery(lines.values("resource")),
            line_granted=ListSubquery(lines.values(
                granted=Coalesce("approved_amount", "amount"))),
        )[:limit]
    )


def quota_requests_waiting() -> QuerySet:
    """Requests waiting for a platform admin's decision, oldest first (the review queue), as
    rows of what the queue shows: the tenant's name and isolation, who asked, and what each
    line asks (`line_resources` and `line_amounts`, in the order asked, read in the same row);
    not whole requests, tenants and users (a page holds up to 400)."""
    lines = QuotaRequestLine.objects.filter(request=OuterRef("pk")).order_by("id")
    return (
        QuotaRequest.objects.filter(status=QuotaRequest.Status.SUBMITTED)
        .order_by("created_at", "id")
        .values(
            "id", "created_at", "ends_on", "tenant__name", "tenant__isolation",
            "requested_by__username", "requested_by__first_name", "requested_by__last_name",
            line_resources=ListSubquery(lines.values("resource")),
            line_amounts=ListSubquery(lines.values("amount")),
        )
    )


def quota_requests_on_the_way() -> QuerySet:
    """Approved requests not yet applied on the cluster (still applying, or failed), oldest
    first, with only what the queue shows of them: status, last error, attempts, the
    tenant's name."""
    return (
        QuotaRequest.objects.filter(status__in=(QuotaRequest.Status.APPROVED,
                                                QuotaRequest.Status.FAILED))
        .order_by("created_at", "id")
        .select_related("tenant")
        .only("id", "status", "last_error", "attempts", "tenant__name")
    )


def quota_requests_pending_count() -> int:
    """Requests waiting for a platform admin's decision (the navigation's badge on every page a
    platform admin opens): one COUNT over the partial index of requests awaiting review."""
    return QuotaRequest.objects.filter(status=QuotaRequest.Status.SUBMITTED).count()


# --- what a request would do ------------------------------------------------------------------


@dataclass(frozen=True)
class PreviewLine:
    """One resource class of a (prospective) request: the tenant's quota and its pool's capacity.

    `capacity` is the pool the tenant schedules on (its reserved nodes, or the shared pool);
    `pool_added` is what the whole decision adds to that pool: this line alone for one request,
    every selected request's line of the same class and pool for a bulk decision.
    """

    resource: str
    label: str
    current: int
    in_use: int  # what the tenant's workloads hold (`demand_in_use`, as every page says)
    amount: int
    capacity: ResourceCapacity
    added_to_pool: int | None = None
    request: QuotaRequest | None = None
    cluster_in_use: int | None = None  # the ResourceQuota's last figure, when it differs

    @property
    def resulting(self) -> int:
        return self.current + self.amount

    @property
    def pool_added(self) -> int:
        return self.amount if self.added_to_pool is None else self.added_to_pool

    @property
    def granted_after(self) -> int:
        return self.capacity.granted + self.pool_added

    @property
    def free_after(self) -> int | None:
        return self.capacity.free(extra=self.pool_added)

    @property
    def fits(self) -> bool | None:
        """Whether the pool's healthy units still cover every grant; None if not measured."""
        free = self.free_after
        return None if free is None else free >= 0

    @property
    def beyond_pool(self) -> bool:
        """The tenant's own quota after approval exceeds what its pool holds healthy."""
        return bool(self.capacity.unschedulable(quota=self.resulting))

    @property
    def ratio_before(self) -> Decimal | None:
        return self.capacity.ratio()

    @property
    def ratio_after(self) -> Decimal | None:
        return self.capacity.ratio(extra=self.pool_added)


def quota_preview(*, tenant: Tenant, lines: list[tuple[str, int]]) -> list[PreviewLine]:
    """What granting `lines` (resource, more) would make the tenant's quota and its pool's."""
    quotas = {q.resource: q for q in Quota.objects.filter(tenant=tenant)}
    held = demand_in_use(tenant_ids=[tenant.pk]).get(tenant.pk, {})
    capacity = tenant_capacity_by_resource_class(tenant=tenant)
    preview = []
    for resource, amount in lines:
        if resource not in capacity:
            continue
        quota = quotas.get(resource)
        used = held.get(resource, 0)
        preview.append(
            PreviewLine(
                resource=resource,
                label=resource_classes.parse(resource).label,
                current=quota.limit if quota else 0,
                in_use=used,
                amount=max(0, amount or 0),
                capacity=capacity[resource],
                cluster_in_use=_cluster_differs(quota, used),
            )
        )
    return preview


def quota_requests_impact(*, requests: list[QuotaRequest]) -> list[PreviewLine]:
    """What approving every waiting request of `requests` as asked would do, line by line.

    Each line's pool figures count every selected request that adds to the same pool and
    class, as approving them together would. Requests not waiting for a decision are left out.
    A fixed number of queries (`requests` come with tenant and lines, as the selectors give).
    """
    # In the order a bulk approval grants them, so each line starts from the quota before it.
    waiting = sorted(
        (r for r in requests if r.status == QuotaRequest.Status.SUBMITTED),
        key=lambda r: (r.created_at, r.pk),
    )
    if not waiting:
        return []
    pools = {r.tenant_id: pool_of(r.tenant) for r in waiting}
    capacity = pool_capacity_by_resource_class(pools=set(pools.values()))
    quotas = {
        (q.tenant_id, q.resource): q
        for q in Quota.objects.filter(tenant_id__in=set(pools), resource__in=_resources(waiting))
    }
    limits = {key: q.limit for key, q in quotas.items()}
    held = demand_in_use(tenant_ids=sorted(pools))
    added: dict[tuple[str, str], int] = {}
    for request in waiting:
        for line in request.lines.all():
            key = (pools[request.tenant_id], line.resource)
            added[key] = added.get(key, 0) + line.amount
    impact = []
    for request in waiting:
        pool = pools[request.tenant_id]
        for line in request.lines.all():
            if line.resource not in capacity[pool]:
                continue
            quota = quotas.get((request.tenant_id, line.resource))
            current = limits.get((request.tenant_id, line.resource), 0)
            limits[(request.tenant_id, line.resource)] = current + line.amount
            used = held.get(request.tenant_id, {}).get(line.resource, 0)
            impact.append(
                PreviewLine(
                    resource=line.resource,
                    label=line.resource_label,
                    current=current,
                    in_use=used,
                    cluster_in_use=_cluster_differs(quota, used),
                    amount=line.amount,
                    capacity=capacity[pool][line.resource],
                    added_to_pool=added[(pool, line.resource)],
                    request=request,
                )
            )
    return impact


def _cluster_differs(quota: Quota | None, used: int) -> int | None:
    """The cluster's own figure (the ResourceQuota's status, as the last reconcile read it)
    where it differs from what the workloads hold; None where they agree."""
    if quota is None or quota.in_use == used:
        return None
    return quota.in_use


def _resources(requests: list[QuotaRequest]) -> set[str]:
    return {line.resource for r in requests for line in r.lines.all()}


# --- what a decision did ----------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionLine:
    resource: str
    label: str
    asked: int
    granted: int
    limit_before: int | None  # as recorded when the request was decided; None: not recorded
    limit_after: int | None


@dataclass(frozen=True)
class Decision:
    """Who closed a request, when, why, and what it did to the quota at that moment."""

    status: str
    status_label: str
    by: str
    at: datetime.datetime | None
    note: str
    lines: list[DecisionLine]


def quota_request_decision(*, request: QuotaRequest) -> Decision | None:
    """The recorded decision on `request` (None while it waits for one). Two queries at most."""
    if request.status == QuotaRequest.Status.SUBMITTED:
        return None
    by, at = "", request.decided_at
    if request.decided_by is not None:
        username, full_name = request.decided_by.get_username(), request.decided_by.get_full_name()
        by = f"{full_name} ({username})" if full_name else username
    if request.status == QuotaRequest.Status.WITHDRAWN:
        # A withdrawal is the requester's, not a decision: the audit trail says who and when.
        event = (
            AuditEvent.objects.filter(
                action="quota_request.withdraw",
                object_type=QuotaRequest._meta.label_lower,
                object_id=str(request.pk),
            )
            .order_by("-created_at")
            .first()
        )
        if event is not None:
            by, at = event.actor_repr, event.created_at
    closed_without_grant = request.status in {
        QuotaRequest.Status.REJECTED,
        QuotaRequest.Status.WITHDRAWN,
    }
    lines = [
        DecisionLine(
            resource=line.resource,
            label=line.resource_label,
            asked=line.amount,
            granted=0 if closed_without_grant else line.granted,
            limit_before=line.limit_before,
            limit_after=line.limit_after,
        )
        for line in request.lines.all()
    ]
    return Decision(
        status=request.status,
        # The decision itself, whatever became of it since (applied, failed, ended).
        status_label={
            QuotaRequest.Status.REJECTED: "Rejected",
            QuotaRequest.Status.WITHDRAWN: "Withdrawn",
        }.get(request.status, "Approved"),
        by=by,
        at=at,
        note=request.decision_note,
        lines=lines,
    )


@dataclass(frozen=True)
class PendingAsk:
    """An open request of the tenant that already asks for more of `resource`."""

    request_id: int
    resource: str
    label: str
    amount: int
    status: str

    @property
    def status_label(self) -> str:
        return QuotaRequest.Status(self.status).label


def tenant_pending_asks(*, tenant: Tenant, resources: list[str]) -> list[PendingAsk]:
    """The tenant's open requests (submitted, or approved and not applied yet) that ask for
    any of `resources`: a second ask for the same class is usually a mistake. One query."""
    if not resources:
        return []
    rows = (
        QuotaRequestLine.objects.filter(
            request__tenant=tenant, request__status__in=QuotaRequest.OPEN,
            resource__in=resources,
        )
        .order_by("request_id", "id")
        .values_list("request_id", "resource", "amount", "request__status")
    )
    return [PendingAsk(pk, resource, resource_label(resource), amount, status)
            for pk, resource, amount, status in rows]
