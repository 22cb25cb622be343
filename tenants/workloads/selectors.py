"""Reads about workloads, already scoped to what the user may see and already prefetched; and
the contexts the kinds validate and build against (`contexts.py`, re-exported here)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from django.core.paginator import Page, Paginator
from django.db.models import F, OuterRef, Q, QuerySet, Subquery
from django.shortcuts import get_object_or_404

from inventory import resource_classes
from inventory.models import Cluster

from ..access.models import Tenant
from ..access.rules import in_tenants_visible_to
from ..quota.limits import fleet_limits, grants_by_cluster
from ..quota.models import Quota
from .contexts import (  # noqa: F401 (re-exported: the contexts are reads, found here)
    NotebookFacts,
    admission_labels,
    build_context,
    endpoint_queue_of,
    launch_context,
    notebook_facts,
    priority_class,
    priority_labels,
    vm_image_catalog,
)
from .in_use import demand_in_use
from .models import (
    HOLDING,
    OPEN_EPISODE_STATES,
    IdleEpisode,
    Workload,
    WorkloadEvent,
    WorkloadStatus,
)

# What a workload's badge reads of its cluster (whether it answers, since when, why), joined
# into every read that shows workloads: no query per row.
CLUSTER_FIELDS = (
    "cluster__slug", "cluster__name", "cluster__state", "cluster__reachable",
    "cluster__unreachable_since", "cluster__last_error",
)


def workloads_visible_to(user) -> QuerySet[Workload]:
    """Workloads of the tenants `user` may see (another tenant's are simply not there), with
    `observed_at`, when the portal last saw each, and their cluster."""
    return in_tenants_visible_to(
        Workload.objects.select_related("tenant", "launched_by", "cluster").with_observed_at(),
        user,
    )


# What the API's list shows of a workload (WorkloadSerializer): all but the manifests last
# applied and the failure count; of its tenant the slug, of its launcher the username;
# `observed_at` is annotated.
WORKLOAD_API_FIELDS = (
    "id", "tenant__slug", "kind", "name", "launched_by__username", "spec", "demand", "status",
    "status_reason", "status_message", "observed", "created_at", "ready_at",
    "deleted_at", "desired_version", "applied_version", "applied_at", "reconcile_error",
    "reconcile_failed_at", "gpu_utilization", "gpu_measured_at", "keep_running_reason",
    "cluster_id", "label", *CLUSTER_FIELDS,
)


def workloads_listed_to(user) -> QuerySet[Workload]:
    """`workloads_visible_to(user)` with the columns the API's list shows (its tenant and
    launcher joined) and `observed_at`."""
    return workloads_visible_to(user).only(*WORKLOAD_API_FIELDS)


def workload_get_for_user(*, user, workload_id: int) -> Workload:
    """The workload if `user` may see its tenant; missing and forbidden are the same 404. With
    the cluster it runs on and that cluster's site (joined)."""
    return get_object_or_404(workloads_visible_to(user).select_related("cluster__site"),
                             pk=workload_id)


def tenant_workloads(
    *, tenant: Tenant, kind: str | None = None, status: str | None = None,
    include_deleted: bool = False, cluster: str | None = None, label: str | None = None,
) -> QuerySet[Workload]:
    workloads = Workload.objects.filter(tenant=tenant).select_related(
        "tenant", "launched_by", "cluster"
    )
    if label:
        workloads = workloads.filter(label=label)
    if kind:
        workloads = workloads.filter(kind=kind)
    if cluster:
        workloads = workloads.filter(cluster_id=cluster)
    if status:
        workloads = workloads.filter(status=status)
    elif not include_deleted:
        workloads = workloads.exclude(status=WorkloadStatus.DELETED)
    return workloads.order_by("-created_at", "-id")


# What a row of the workload list shows (and `in_progress` reads): not the spec, the details
# or the manifests a workload keeps, nor its tenant (the page's) and launcher's password hash.
LIST_FIELDS = (
    "id", "tenant_id", "kind", "name", "status", "status_reason", "status_message", "demand",
    "cluster_id", "created_at", "desired_version", "applied_version", "reconcile_error",
    "launched_by", "gpu_utilization", "gpu_measured_at", "keep_running_reason", "label",
    *CLUSTER_FIELDS,
)


def tenant_workloads_for_list(
    *, tenant: Tenant, kind: str | None = None, status: str | None = None,
    cluster: str | None = None, label: str | None = None,
) -> QuerySet[Workload]:
    """`tenant_workloads` with only what the list's rows show; its launcher's names as
    `launched_by_username`, `launched_by_first_name` and `launched_by_last_name` (joined), not
    as a user object per row; the state of its open idle episode as `idle_state`."""
    open_idle = IdleEpisode.objects.filter(workload=OuterRef("pk"),
                                           state__in=OPEN_EPISODE_STATES).values("state")[:1]
    return (
        tenant_workloads(tenant=tenant, kind=kind, status=status, cluster=cluster, label=label)
        .select_related(None)
        .select_related("cluster")
        .only(*LIST_FIELDS)
        .annotate(
            launched_by_username=F("launched_by__username"),
            launched_by_first_name=F("launched_by__first_name"),
            launched_by_last_name=F("launched_by__last_name"),
            idle_state=Subquery(open_idle),
        )
    )



def tenant_workloads_recent(*, tenant: Tenant, limit: int) -> list[Workload]:
    """The tenant's latest workloads (not deleted) with what a summary shows of them (the
    dashboard's card): name, kind and state, not their specs and manifests. One query (the
    index of live workloads by tenant and age answers it)."""
    rows = (
        Workload.objects.filter(tenant=tenant).exclude(status=WorkloadStatus.DELETED)
        .order_by("-created_at", "-id")
        .values_list("id", "kind", "name", "status", "status_reason", *CLUSTER_FIELDS)[:limit]
    )
    return [
        Workload(id=pk, tenant_id=tenant.pk, kind=kind, name=name, status=status,
                 status_reason=reason, cluster=Cluster(
                     slug=slug, name=cluster_name, state=state, reachable=reachable,
                     unreachable_since=since, last_error=error))
        for pk, kind, name, status, reason, slug, cluster_name, state, reachable, since, error
        in rows
    ]


def workload_events(*, workload: Workload) -> QuerySet[WorkloadEvent]:
    return workload.events.select_related("actor").order_by("-created_at", "-id")


_GPU_PREFIXES = ("gpu:", "mig:", "hami:")


def stopped_by_policy(workload: Workload, events: list[WorkloadEvent]) -> WorkloadEvent | None:
    """Why it is stopped, when a policy stopped it (no one acted) and it stays so: the last
    power action among `events` (its timeline, newest first, as the page reads it)."""
    if (workload.spec or {}).get("running", True):
        return None
    last = next((e for e in events if e.kind == WorkloadEvent.Kind.POWER), None)
    return last if last is not None and last.actor_id is None else None


def workload_idle_episode(*, workload: Workload) -> IdleEpisode | None:
    """Its GPUs' idle episode still open (idle, warned, or given back and not undone)."""
    return IdleEpisode.objects.filter(workload=workload, state__in=OPEN_EPISODE_STATES).first()


def tenant_idle_episodes(*, tenant: Tenant) -> list[IdleEpisode]:
    """The tenant's open idle episodes, each with its workload, most idle first."""
    return list(IdleEpisode.objects.filter(workload__tenant=tenant, state__in=OPEN_EPISODE_STATES)
                .select_related("workload").order_by("started_at", "id"))


def tenant_idle_history(*, tenant: Tenant) -> QuerySet[IdleEpisode]:
    """The tenant's ended idle episodes, latest first, each with its workload."""
    return (IdleEpisode.objects.filter(workload__tenant=tenant)
            .exclude(state__in=OPEN_EPISODE_STATES).select_related("workload", "ended_by")
            .order_by("-started_at", "-id"))


@dataclass(frozen=True)
class Reclaimed:
    """What the idle policy gave back within a period: GPU-hours, and the money they would
    have cost (at the price when it acted; `saved` None when nothing of it was priced)."""

    gpu_hours: Decimal = Decimal(0)
    saved: Decimal | None = None
    actions: int = 0


def idle_reclaimed(*, start, end, now, tenant_ids: list[int] | None = None,
                   where: Q | None = None) -> Reclaimed:
    """GPU-hours given back by the idle policy within [start, end): each action's GPUs from
    when it acted until it was undone or resized (or `now`), clipped to the period. Of the
    tenants `tenant_ids` (None: all), and the episodes `where` selects (`workload__tenant__…`)."""
    acted = IdleEpisode.objects.filter(acted_at__lt=end).filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=start))
    if tenant_ids is not None:
        acted = acted.filter(workload__tenant_id__in=tenant_ids)
    if where is not None:
        acted = acted.filter(where)
    hours, saved, actions = Decimal(0), None, 0
    for acted_at, ended_at, gpus, per_hour in acted.values_list(
            "acted_at", "ended_at", "reclaimed", "saved_per_hour"):
        seconds = (min(ended_at or now, end, now) - max(acted_at, start)).total_seconds()
        if seconds <= 0:
            continue
        actions += 1
        hours += Decimal(seconds) / 3600 * gpus
        if per_hour is not None:
            saved = (saved or Decimal(0)) + per_hour * Decimal(seconds) / 3600
    return Reclaimed(gpu_hours=hours.quantize(Decimal("0.1")),
                     saved=None if saved is None else saved.quantize(Decimal("0.01")),
                     actions=actions)


def _gpu_held() -> dict[int, dict[str, int]]:
    """Per tenant, what its workloads that are not deleted hold of each GPU class (whole GPUs,
    MIG instances, HAMi GiB and percent): `demand_in_use` of every tenant. One query."""
    return {
        tenant_id: gpus
        for tenant_id, held in demand_in_use(tenant_ids=None).items()
        if (gpus := {k: v for k, v in held.items() if k.startswith(_GPU_PREFIXES)})
    }


def tenant_demand_in_use(*, tenant: Tenant) -> dict[str, int]:
    return demand_in_use(tenant_ids=[tenant.pk]).get(tenant.pk, {})


GPU_KINDS = ("gpu", "mig", "hami")


@dataclass(frozen=True)
class GpuHolding:
    """What one tenant's workloads hold of one GPU class, beside its quota for it."""

    resource: str
    label: str
    kind: str  # gpu | mig | hami
    held: int
    granted: int

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.held / self.granted)) if self.granted else 100

    @property
    def short_label(self) -> str:
        """The class without what its kind's badge already says: "NVIDIA L40S memory"."""
        rc = resource_classes.parse(self.resource)
        if self.kind == "hami":
            counter = "memory" if rc.hami_counter == "memory-gib" else "compute"
            return f"{rc.gpu_model.display_name} {counter}"
        if self.kind == "mig":
            return f"{rc.gpu_model.display_name} {rc.mig_profile}"
        return rc.gpu_model.display_name

    @property
    def unit(self) -> str:
        """What the numbers count: GiB or percent of a GPU for HAMi, else GPUs or instances."""
        if self.kind == "hami":
            return "GiB" if self.resource.endswith(":memory-gib") else "%"
        return "GPUs" if self.kind == "gpu" else "instances"


@dataclass(frozen=True)
class TenantGpuHoldings:
    slug: str
    name: str
    isolation: str
    status: str
    lines: tuple[GpuHolding, ...]


def _gpu_granted(*, tenant_ids: list[int] | None = None) -> dict[int, dict[str, int]]:
    """Per tenant, its quota of each GPU class. One query."""
    quotas = Quota.objects.filter(
        Q(resource__startswith="gpu:") | Q(resource__startswith="mig:")
        | Q(resource__startswith="hami:")
    )
    if tenant_ids is not None:
        quotas = quotas.filter(tenant_id__in=tenant_ids)
    granted: dict[int, dict[str, int]] = defaultdict(dict)
    for tenant_id, resource, limit in quotas.values_list("tenant_id", "resource", "limit"):
        # Every cluster's grant and the fleet-wide one: what it may hold across the fleet.
        granted[tenant_id][resource] = granted[tenant_id].get(resource, 0) + limit
    return granted


def _gpu_lines(
    held: Mapping[str, int], granted: Mapping[str, int], order: Mapping[str, int]
) -> tuple[GpuHolding, ...]:
    """One tenant's lines: each GPU class it holds or was granted, in the vocabulary's order."""
    lines = []
    for key in sorted(set(granted) | set(held), key=lambda k: (order.get(k, len(order)), k)):
        try:
            rc = resource_classes.parse(key)
        except resource_classes.UnknownResourceClass:
            continue
        amount, limit = held.get(key, 0), granted.get(key, 0)
        if rc.kind in GPU_KINDS and (amount or limit):
            lines.append(GpuHolding(key, rc.label, rc.kind, amount, limit))
    return tuple(lines)


@dataclass(frozen=True)
class GpuClassHoldings:
    """One GPU class across the tenants: what their workloads hold against their quotas."""

    total: GpuHolding  # held and granted summed over the tenants
    tenants: int  # holding or granted some of it
    over: int  # holding more than their quota of it


@dataclass(frozen=True)
class GpuHoldingsSummary:
    classes: tuple[GpuClassHoldings, ...]
    tenants: int  # with any GPU quota or holding
    over_quota: tuple[TenantGpuHoldings, ...]  # the first few holding more than granted
    over_quota_count: int


def gpu_holdings_summary(*, over_quota_shown: int = 10) -> GpuHoldingsSummary:
    """What tenants hold of each GPU class against their quotas, summed per class, and the
    tenants that hold more than their quota of some class (their lines over quota; the first
    `over_quota_shown` by name). Three queries, whatever the number of tenants or workloads."""
    held, granted = _gpu_held(), _gpu_granted()
    order = resource_classes.key_order()
    per_class: dict[str, list[int]] = {}  # class → [held, granted, tenants, over]
    over_ids: dict[int, tuple[GpuHolding, ...]] = {}
    tenants = 0
    for tenant_id in set(held) | set(granted):
        lines = _gpu_lines(held.get(tenant_id, {}), granted.get(tenant_id, {}), order)
        tenants += bool(lines)
        for line in lines:
            sums = per_class.setdefault(line.resource, [0, 0, 0, 0])
            sums[0] += line.held
            sums[1] += line.granted
            sums[2] += 1
            sums[3] += line.held > line.granted
        over = tuple(line for line in lines if line.held > line.granted)
        if over:
            over_ids[tenant_id] = over
    classes = []
    for key in sorted(per_class, key=lambda k: (order.get(k, len(order)), k)):
        rc = resource_classes.parse(key)
        amount, limit, count, over = per_class[key]
        classes.append(GpuClassHoldings(GpuHolding(key, rc.label, rc.kind, amount, limit),
                                        count, over))
    # pk 0 (no tenant) when nobody is over quota: Django would skip an empty IN, and the
    # page's query count would then depend on the data.
    shown = (
        Tenant.objects.filter(pk__in=list(over_ids) or [0])
        .order_by("name", "pk")
        .values_list("pk", "slug", "name", "isolation", "status")[:over_quota_shown]
    )
    return GpuHoldingsSummary(
        classes=tuple(classes),
        tenants=tenants,
        over_quota=tuple(
            TenantGpuHoldings(slug, name, isolation, status, over_ids[pk])
            for pk, slug, name, isolation, status in shown
        ),
        over_quota_count=len(over_ids),
    )


def gpu_holdings_page(
    *, page: int | str | None, per_page: int = 50, over_quota_only: bool = False
) -> Page:
    """A page of tenants with any GPU quota or holding (or only those holding more than their
    quota of some class), by name, each with its lines. Four queries (holdings, quotas, the
    count and the page's tenants), whatever the number of tenants or workloads."""
    held, granted = _gpu_held(), _gpu_granted()
    order = resource_classes.key_order()
    listed = []
    for tenant_id in set(held) | set(granted):
        lines = _gpu_lines(held.get(tenant_id, {}), granted.get(tenant_id, {}), order)
        if lines and (not over_quota_only or any(x.held > x.granted for x in lines)):
            listed.append(tenant_id)
    tenants = (
        Tenant.objects.filter(pk__in=listed)
        .order_by("name", "pk")
        .values_list("pk", "slug", "name", "isolation", "status")
    )
    found = Paginator(tenants, per_page).get_page(page)
    found.object_list = [
        TenantGpuHoldings(
            slug, name, isolation, status,
            _gpu_lines(held.get(pk, {}), granted.get(pk, {}), order),
        )
        for pk, slug, name, isolation, status in found.object_list
    ]
    return found


@dataclass(frozen=True)
class DemandLine:
    """One resource class a launch (or a scale) would take, against the tenant's quota."""

    resource: str
    label: str
    asked: int
    held: int  # by the tenant's other workloads
    limit: int

    @property
    def left_after(self) -> int:
        return self.limit - self.held - self.asked

    @property
    def fits(self) -> bool:
        return self.limit > 0 and self.left_after >= 0

    @property
    def percent_after(self) -> int:
        return min(100, round(100 * (self.held + self.asked) / self.limit)) if self.limit else 100


def demand_preview(
    *, tenant: Tenant, demand: Mapping[str, int], excluding: int | None = None
) -> list[DemandLine]:
    """What `demand` would leave of the tenant's quota, per class (two queries)."""
    limits = fleet_limits(grants_by_cluster(tenant))
    held: dict[str, int] = defaultdict(int)
    others = Workload.objects.filter(tenant=tenant, status__in=HOLDING)
    if excluding is not None:
        others = others.exclude(pk=excluding)
    for row in others.values_list("demand", flat=True):
        for resource, amount in (row or {}).items():
            held[resource] += int(amount)
    order = resource_classes.key_order()
    lines = []
    for resource in sorted(demand, key=lambda r: (order.get(r, len(order)), r)):
        try:
            label = resource_classes.parse(resource).label
        except resource_classes.UnknownResourceClass:
            label = resource
        lines.append(DemandLine(resource, label, int(demand[resource]), held[resource],
                                limits.get(resource, 0)))
    return lines
