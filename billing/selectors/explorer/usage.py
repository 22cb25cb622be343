"""GPU-hours by tenant, class and day, and the daily chart."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from fractions import Fraction
from functools import cached_property

from django.db import connection
from django.db.models import (
    Case,
    QuerySet,
    Sum,
    Value,
    When,
)

from inventory import resource_classes
from tenants.models import Tenant

from ...calculations.invoicing import class_label
from ...models import UsageRecord
from .filters import (
    ALLOCATED,
    GPU_CLASSES,
    UsageFilter,
    _gpu_seconds,
    _resource_q,
    gpu_equivalent,
    gpu_usage_days,
    hours,
    tenant_filter,
    unit_label,
)

# --- GPU-hours by tenant, class and day -------------------------------------------------------


@dataclass(frozen=True)
class UsageRow:
    """One tenant's use of one GPU class over the filter's range."""

    tenant_slug: str
    tenant_name: str
    cost_center: str
    resource: str
    unit_seconds: int

    # Cached: a row cached for the explorer's page keeps its figures, worked out once.
    @cached_property
    def label(self) -> str:
        return class_label(self.resource)

    @cached_property
    def kind(self) -> str:
        return self.resource.partition(":")[0]

    @cached_property
    def unit(self) -> str:
        return unit_label(self.resource)

    @cached_property
    def unit_hours(self) -> Decimal:
        return hours(self.unit_seconds)

    @cached_property
    def gpu_hours(self) -> Decimal | None:
        share = gpu_equivalent(self.resource)
        if share is None:
            return None
        return hours(Fraction(self.unit_seconds) * share)


def gpu_usage_by_tenant_and_class(usage: UsageFilter) -> QuerySet:
    """Unit-seconds per (tenant, GPU class), one row each, ordered by tenant then class; a
    queryset, so that a page of it is one query (and its count another)."""
    return (
        gpu_usage_days(usage)
        .values("tenant__slug", "tenant__name", "tenant__cost_center", "resource")
        .annotate(unit_seconds=Sum("unit_seconds"))
        .order_by("tenant__name", "tenant__slug", "resource")
    )


def usage_rows(rows) -> list[UsageRow]:
    """Rows of `gpu_usage_by_tenant_and_class` (or a page of them) as `UsageRow`s."""
    return [
        UsageRow(
            tenant_slug=row["tenant__slug"],
            tenant_name=row["tenant__name"],
            cost_center=row["tenant__cost_center"],
            resource=row["resource"],
            unit_seconds=int(row["unit_seconds"] or 0),
        )
        for row in rows
    ]


def gpu_usage_by_day(usage: UsageFilter, *, source: str = ALLOCATED) -> QuerySet:
    """Unit-seconds per (UTC day, tenant, GPU class): the API's rows."""
    return (
        gpu_usage_days(usage, source=source)
        .values("day", "tenant__slug", "resource")
        .annotate(unit_seconds=Sum("unit_seconds"))
        .order_by("day", "tenant__slug", "resource")
    )


@dataclass(frozen=True)
class DailyChart:
    """GPU-hours per day, one stacked series per GPU model and one per tenant."""

    days: list[str]
    by_model: list[dict]
    by_tenant: list[dict]
    total_gpu_hours: Decimal
    # (tenant, GPU class) pairs with usage in the range: the rows of
    # `gpu_usage_by_tenant_and_class`, counted by the chart's query
    tenant_classes: int = 0


def _series(totals: dict[str, dict[date, float]], days: list[date], labels: dict[str, str],
            *, top: int) -> list[dict]:
    ranked = sorted(totals, key=lambda key: (-sum(totals[key].values()), key))
    series = [
        {"key": key, "label": labels.get(key, key),
         "data": [float(hours(totals[key].get(day, 0))) for day in days]}
        for key in ranked[:top]
    ]
    if len(ranked) > top:
        rest = [sum(totals[key].get(day, 0) for key in ranked[top:]) for day in days]
        series.append({"key": "other", "label": f"{len(ranked) - top} others",
                       "data": [float(hours(seconds)) for seconds in rest]})
    return series


# The range's daily rows (one per day, tenant and GPU class) summed in SQL: GPU-seconds per
# model and day, per day for each of the `top` tenants with the most GPU-seconds (ties by slug,
# in code-point order as Python sorts) and for the rest together, how many tenants there are,
# and how many (tenant, GPU class) pairs (the explorer table's rows). A few hundred rows
# whatever the fleet, where the daily rows are tens of thousands a month.
CHART_SQL = """
WITH rows AS ({rows}),
used AS (
    SELECT day, tenant_id, model, SUM(gpu_seconds) AS gpu_seconds FROM rows
    WHERE gpu_seconds <> 0 GROUP BY day, tenant_id, model
),
ranked AS (
    SELECT used.tenant_id, t.slug, t.name, SUM(used.gpu_seconds) AS total
    FROM used JOIN {tenants} t ON t.id = used.tenant_id
    GROUP BY used.tenant_id, t.slug, t.name
),
top AS (
    SELECT tenant_id, slug, name, total FROM ranked ORDER BY total DESC, slug COLLATE {code_points}
    LIMIT %s
)
SELECT 0, model, '', 0.0, day, SUM(gpu_seconds) FROM used GROUP BY model, day
UNION ALL
SELECT 1, top.slug, top.name, top.total, used.day, SUM(used.gpu_seconds)
FROM used JOIN top ON top.tenant_id = used.tenant_id
GROUP BY top.slug, top.name, top.total, used.day
UNION ALL
SELECT 2, '', '', 0.0, day, SUM(gpu_seconds) FROM used
WHERE tenant_id NOT IN (SELECT tenant_id FROM top) GROUP BY day
UNION ALL
SELECT 3, '', '', 0.0, NULL, COUNT(*) FROM ranked
UNION ALL
SELECT 4, '', '', 0.0, NULL, COUNT(*) FROM (SELECT DISTINCT tenant_id, resource FROM rows) classes
"""
CODE_POINTS = {"postgresql": '"C"', "sqlite": "BINARY"}


def _day(value) -> date:
    return date.fromisoformat(value) if isinstance(value, str) else value


def gpu_hours_chart(usage: UsageFilter, *, top: int = 8) -> DailyChart:
    """GPU-hours by day, stacked by GPU model and by tenant (the top `top`, then the rest).

    One query, summed in SQL: its rows are bounded by days x (models + top + 1).
    """
    model_of = Case(
        *[When(_resource_q(key), then=Value(key)) for key in resource_classes.GPU_MODELS],
        default=Value(""),
    )
    # One row per day, tenant and class already (UsageDaily's key, of one source).
    rows = (
        gpu_usage_days(usage)
        .order_by()
        .values("day", "tenant_id", "resource")
        .annotate(model=model_of, gpu_seconds=_gpu_seconds("unit_seconds"))
    )
    rows_sql, params = rows.query.sql_with_params()
    # Only Django's own SQL (its values passed as parameters) and quoted names go in.
    sql = CHART_SQL.format(
        rows=rows_sql, tenants=connection.ops.quote_name(Tenant._meta.db_table),
        code_points=CODE_POINTS.get(connection.vendor, '"C"'),
    )
    by_model: dict[str, dict[date, float]] = defaultdict(dict)
    tops: dict[str, dict[date, float]] = defaultdict(dict)
    ranks: dict[str, tuple[float, str]] = {}
    names: dict[str, str] = {}
    rest: dict[date, float] = {}
    tenants = tenant_classes = 0
    with connection.cursor() as cursor:
        cursor.execute(sql, (*params, top))
        for kind, key, label, total, day, gpu_seconds in cursor.fetchall():
            if kind == 0:
                by_model[key][_day(day)] = gpu_seconds
            elif kind == 1:
                tops[key][_day(day)] = gpu_seconds
                ranks[key], names[key] = (-total, key), label
            elif kind == 2:
                rest[_day(day)] = gpu_seconds
            elif kind == 3:
                tenants = int(gpu_seconds)
            else:
                tenant_classes = int(gpu_seconds)
    days = usage.days
    models = {key: model.display_name for key, model in resource_classes.GPU_MODELS.items()}
    models[""] = "Other GPU models"
    by_tenant = [
        {"key": slug, "label": names[slug],
         "data": [float(hours(tops[slug].get(day, 0))) for day in days]}
        for slug in sorted(tops, key=ranks.__getitem__)
    ]
    if tenants > top:
        by_tenant.append({"key": "other", "label": f"{tenants - top} others",
                          "data": [float(hours(rest.get(day, 0))) for day in days]})
    return DailyChart(
        days=[day.isoformat() for day in days],
        by_model=_series(by_model, days, models, top=top),
        by_tenant=by_tenant,
        total_gpu_hours=hours(sum(sum(per_day.values()) for per_day in by_model.values())),
        tenant_classes=tenant_classes,
    )


# --- GPU-hours by cluster ---------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterUsage:
    """The filter's allocated GPU-hours (GPU-equivalents) on one cluster."""

    cluster: str
    gpu_hours: Decimal


def gpu_hours_by_cluster(usage: UsageFilter) -> list[ClusterUsage]:
    """Allocated GPU-hours per cluster the usage records carry, most first: the filter's range,
    tenants and class. One query over the records (of the range's hours: the daily sums are not
    kept per cluster)."""
    records = UsageRecord.objects.filter(
        GPU_CLASSES, tenant_filter(usage), source=ALLOCATED, hour__gte=usage.start,
        hour__lt=usage.end,
    )
    if usage.resource:
        records = records.filter(_resource_q(usage.resource))
    rows = (
        records.values("cluster")
        .annotate(seconds=Sum(_gpu_seconds("unit_seconds")))
        .order_by()
    )
    found = [ClusterUsage(row["cluster"], hours(Fraction(row["seconds"] or 0))) for row in rows]
    return sorted((row for row in found if row.gpu_hours), key=lambda r: (-r.gpu_hours,
                                                                           r.cluster))
