"""The explorer's page: its summary cached under its range's usage stamps, and the table."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import datetime

from django.core.paginator import EmptyPage, Page, Paginator
from django.db.models import Q, Sum

from core import caching
from tenants.models import Tenant

from ...models import (
    UsageStamp,
)
from ..tenant_filter import few_choices
from .filters import UsageFilter, _days
from .health import MeteringHealth, _metering_health
from .usage import (
    ClusterUsage,
    DailyChart,
    UsageRow,
    gpu_hours_by_cluster,
    gpu_hours_chart,
    gpu_usage_by_tenant_and_class,
    usage_rows,
)
from .utilization import Utilization, utilization_by_tenant, utilization_total

# --- the explorer's page, cached under its range's usage stamps -------------------------------

# A summary is computed once per change of what it is computed from: it is cached under the sum
# of its range's `UsageStamp` changes, which database triggers count on every write of usage
# records, metering windows and cross-checks (and of tenants' names, slugs and cost centers),
# whoever makes it. Any worker's cache (per-process locmem or shared) stays correct: the stamp
# is read from the database on every view, and a value is only cached when the stamp still
# holds after computing it (so a write committed meanwhile is never cached under the stamp
# before it). The hours left unmeasured depend on the clock too: they are worked out per view.
EXPLORER_CACHE_SECONDS = 24 * 3600
EXPLORER_PAGE_SIZE = 25


def usage_stamp(usage: UsageFilter) -> int:
    """The changes counted on the range's days and on every day's, summed: one query."""
    first, after = _days(usage)
    return UsageStamp.objects.filter(
        Q(day=UsageStamp.ALL_DAYS) | Q(day__gte=first, day__lt=after)
    ).aggregate(changes=Sum("changes", default=0))["changes"]


@dataclass(frozen=True)
class ExplorerSummary:
    """What the explorer shows of a filter whatever the page of its table, its figures worked
    out (rows' hours, the charts' data) before it is cached."""

    rows_total: int  # rows of `gpu_usage_by_tenant_and_class`
    chart: DailyChart
    chart_data: dict  # the chart, for JSON
    utilization: list[Utilization]
    utilization_data: list[dict]  # busy and idle hours of the 15 most allocated, for JSON
    fleet: Utilization
    health: MeteringHealth  # as of no particular time: see `MeteringHealth.as_of`
    cost_centers: list[str] | None  # the filter's choices (None: too many, a text box)
    by_cluster: list[ClusterUsage] = field(default_factory=list)  # allocated GPU-hours


def cost_center_choices() -> list[str] | None:
    """The cost centers of the filter's select, or None when too many for one: one query."""
    return few_choices(
        Tenant.objects.exclude(cost_center="").order_by("cost_center")
        .values_list("cost_center", flat=True).distinct()
    )


@dataclass(frozen=True)
class Explorer:
    summary: ExplorerSummary
    page: Page  # of `UsageRow`s
    health: MeteringHealth


class _Rows:
    """A paginator's object list that knows only its length (the page is read apart)."""

    def __init__(self, count: int):
        self.count_ = count

    def __len__(self) -> int:
        return self.count_


def _page_number(page: str | int | None) -> int:
    try:
        return int(page)
    except (TypeError, ValueError):
        return 1


def _explorer_key(usage: UsageFilter, stamp: int) -> str:
    what = repr((usage.start.isoformat(), usage.end.isoformat(), usage.tenant_ids,
                 usage.tenant_slug, usage.resource, usage.cost_center))
    digest = hashlib.sha256(what.encode()).hexdigest()[:32]
    return caching.key("usage-explorer", "v2", digest, stamp)


def _worked_out(rows: list, *names: str) -> list:
    """`rows` with the cached properties `names` worked out (so that they are cached too)."""
    for row in rows:
        for name in names:
            getattr(row, name)
    return rows


UTILIZATION_FIGURES = ("utilization_percent", "allocated_hours", "measured_hours", "busy_hours",
                       "idle_hours")


def explorer_summary(usage: UsageFilter) -> ExplorerSummary:
    """The summary computed afresh (eleven queries whatever the data)."""
    chart = gpu_hours_chart(usage)
    utilization = _worked_out(utilization_by_tenant(usage), *UTILIZATION_FIGURES)
    return ExplorerSummary(
        rows_total=chart.tenant_classes,
        chart=chart,
        chart_data=asdict(chart) | {"total_gpu_hours": float(chart.total_gpu_hours)},
        utilization=utilization,
        utilization_data=[
            {"tenant": row.tenant_name, "allocated": float(row.allocated_hours),
             "busy": float(row.allocated_hours - row.idle_hours),
             "idle": float(row.idle_hours)}
            for row in utilization[:15]
        ],
        fleet=_worked_out([utilization_total(utilization)], *UTILIZATION_FIGURES)[0],
        health=_metering_health(usage),
        cost_centers=cost_center_choices(),
        by_cluster=gpu_hours_by_cluster(usage),
    )


def _table_page(usage: UsageFilter, rows_total: int, requested: int) -> tuple[int, list[UsageRow]]:
    """The number of the page shown for `requested` (as `Paginator.get_page` picks it) and its
    rows: one query."""
    paginator = Paginator(_Rows(rows_total), EXPLORER_PAGE_SIZE)
    try:
        number = paginator.validate_number(requested)
    except EmptyPage:
        number = paginator.num_pages
    bottom = (number - 1) * EXPLORER_PAGE_SIZE
    rows = gpu_usage_by_tenant_and_class(usage)[bottom:bottom + EXPLORER_PAGE_SIZE]
    return number, _worked_out(
        usage_rows(rows), "label", "kind", "unit", "unit_hours", "gpu_hours"
    )


def usage_explorer(usage: UsageFilter, *, page: str | int | None, now: datetime) -> Explorer:
    """The explorer of a filter and one page of its table: from the cache in one query while
    the range's stamp holds, else computed (thirteen queries whatever the data; three when only
    the page of the table is not cached)."""
    stamp = usage_stamp(usage)
    summary_key = _explorer_key(usage, stamp)
    requested = _page_number(page)
    page_key = f"{summary_key}:page:{requested}"
    cached = caching.get_many("usage-explorer", [summary_key, page_key])
    fresh = {}
    summary = cached.get(summary_key)
    if summary is None:
        summary = fresh[summary_key] = explorer_summary(usage)
    table = cached.get(page_key)
    if table is None:
        table = fresh[page_key] = _table_page(usage, summary.rows_total, requested)
    if fresh and usage_stamp(usage) == stamp:
        caching.set_many("usage-explorer", fresh, timeout=EXPLORER_CACHE_SECONDS)
    number, rows = table
    paginator = Paginator(_Rows(summary.rows_total), EXPLORER_PAGE_SIZE)
    return Explorer(
        summary=summary,
        page=Page(rows, number, paginator),
        health=summary.health.as_of(usage, now),
    )
