"""The usage explorer's reads: GPU-hours by tenant, class and day; allocated against measured
utilization; idle GPU-hours; the health of metering. Everything is summed in SQL.

GPU-hours by tenant, class and day are summed from `UsageDaily` (the records summed per day,
kept equal to them by database triggers): a range of whole days needs nothing finer, and a
month is then thousands of rows rather than millions. Utilization needs each tenant-hour (idle
time is clamped per hour) and still reads the records, of measured hours only. The page's
summary is cached under a stamp of its range that database triggers move on every write (see
`usage_explorer`), so it is summed once per metering run rather than per view.

GPU-hours count GPU-equivalents, so that whole GPUs, MIG instances and HAMi shares add up: a
whole GPU is 1, a MIG instance `<n>g.<mem>` is n/7 of its GPU (every MIG-capable model has
seven compute slices), a HAMi compute share counts its percent of a GPU (`hami:<m>:cores`
holds percent-seconds). A HAMi memory share (`hami:<m>:memory-gib`) is the same share's other
axis: shown in its own unit, never added to GPU-hours (it would count the share twice).

Idle GPU-hours are allocated minus measured busy GPU-seconds, clamped at zero per tenant-hour
(as `billing.calculations.idle_gpu_seconds` clamps per key): an hour measured above its
allocation never hides idle time in another. Only hours whose measured window is done count
towards utilization: an hour that is a gap (Prometheus was down), pending, or not metered at all
(measured metering off) is left out, because unknown is not idle. DCGM sees a HAMi share as its
whole GPU, so a tenant's busy seconds on a shared GPU may exceed its share: the clamp keeps its
idle time at zero there rather than below.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from fractions import Fraction
from functools import cached_property

from django.core.cache import cache
from django.core.paginator import EmptyPage, Page, Paginator
from django.db import connection, transaction
from django.db.models import (
    Case,
    Count,
    F,
    FloatField,
    Max,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Cast, Greatest, TruncDate

from inventory import resource_classes
from tenants.models import Tenant

from .. import calculations
from ..calculations.invoicing import class_label
from ..calculations.money import SECONDS_PER_HOUR, floor_hour, month_start, round_to
from ..models import (
    CrossCheck,
    MeteringFlag,
    MeteringWindow,
    UsageDaily,
    UsageRecord,
    UsageStamp,
    WindowStatus,
)
from .tenant_filter import few_choices

ALLOCATED = UsageRecord.Source.ALLOCATED
MEASURED = UsageRecord.Source.MEASURED
GPU_KINDS = ("gpu", "mig", "hami")
MIG_SLICES = 7
MIG_PROFILE = re.compile(r":(\d)g\.")
HOURS = Decimal("0.01")
GPU_CLASSES = (
    Q(resource__startswith="gpu:")
    | Q(resource__startswith="mig:")
    | Q(resource__startswith="hami:")
)


@dataclass(frozen=True)
class UsageFilter:
    """What the explorer shows: [start, end) in whole UTC days, and whose usage."""

    start: datetime
    end: datetime
    tenant_ids: list[int] | None = None  # None: every tenant (finance, admins)
    tenant_slug: str = ""
    resource: str = ""  # a GPU resource class, or a GPU model key (all its classes)
    cost_center: str = ""

    @property
    def days(self) -> list[date]:
        first, last = self.start.date(), (self.end - timedelta(seconds=1)).date()
        return [first + timedelta(days=n) for n in range((last - first).days + 1)]


# --- GPU-equivalents ---------------------------------------------------------------------------


def gpu_equivalent(resource: str) -> Fraction | None:
    """How many GPUs one unit of `resource` is (None: not counted in GPU-hours).

    Read from the key alone, as `_gpu_seconds` reads it in SQL, so that a model the vocabulary
    does not know (the measured source keeps `gpu:<its name>`) still counts as the GPU it is.
    """
    kind, _, rest = resource.partition(":")
    if kind == "gpu" and rest:
        return Fraction(1)
    if kind == "mig":
        slices = MIG_PROFILE.search(rest)
        if slices and 1 <= int(slices.group(1)) <= MIG_SLICES:
            return Fraction(int(slices.group(1)), MIG_SLICES)
    if kind == "hami" and rest.endswith(":cores"):
        return Fraction(1, 100)
    return None


def _gpu_seconds(field: str) -> Case:
    """`gpu_equivalent` in SQL: the GPU-seconds a row's `field` comes to."""
    seconds = Cast(field, FloatField())
    whens = [When(resource__startswith="gpu:", then=seconds)]
    whens += [
        When(
            Q(resource__startswith="mig:", resource__contains=f":{slices}g."),
            then=seconds * Value(slices / MIG_SLICES),
        )
        for slices in range(1, MIG_SLICES + 1)
    ]
    whens.append(
        When(Q(resource__startswith="hami:", resource__endswith=":cores"),
             then=seconds / Value(100.0))
    )
    return Case(*whens, default=Value(0.0), output_field=FloatField())


def hours(seconds: Fraction | float | int | None) -> Decimal:
    """Seconds as hours, to the hundredth (half up)."""
    return round_to(Fraction(seconds or 0) / SECONDS_PER_HOUR, HOURS)


def unit_label(resource: str) -> str:
    """What one hour of `resource` is called in the explorer's table."""
    kind, _, rest = resource.partition(":")
    if kind == "mig":
        return "instance-hours"
    if kind == "hami":
        return "GiB-hours" if rest.endswith(":memory-gib") else "%-GPU-hours"
    return "GPU-hours"


# --- filtering -----------------------------------------------------------------------------------


def _resource_q(resource: str) -> Q:
    if ":" in resource:
        return Q(resource=resource)
    return (
        Q(resource=f"gpu:{resource}")
        | Q(resource__startswith=f"mig:{resource}:")
        | Q(resource__startswith=f"hami:{resource}:")
    )


def _tenant_q(usage: UsageFilter, prefix: str = "") -> Q:
    q = Q()
    if usage.tenant_ids is not None:
        q &= Q(**{f"{prefix}tenant_id__in": usage.tenant_ids})
    if usage.tenant_slug:
        q &= Q(**{f"{prefix}tenant__slug": usage.tenant_slug})
    if usage.cost_center:
        q &= Q(**{f"{prefix}tenant__cost_center": usage.cost_center})
    return q


def _days(usage: UsageFilter) -> tuple[date, date]:
    """The filter's [first day, day after the last): its bounds must be whole UTC days."""
    for bound in (usage.start, usage.end):
        if bound.astimezone(UTC).time() != datetime.min.time():
            raise ValueError(f"{bound.isoformat()} is not the start of a UTC day.")
    return usage.start.astimezone(UTC).date(), usage.end.astimezone(UTC).date()


def gpu_usage_days(usage: UsageFilter, *, source: str = ALLOCATED) -> QuerySet[UsageDaily]:
    """The GPU-class usage per day the filter selects (of one source): the records' sums."""
    first, after = _days(usage)
    days = UsageDaily.objects.filter(
        GPU_CLASSES, _tenant_q(usage), source=source, day__gte=first, day__lt=after
    )
    if usage.resource:
        days = days.filter(_resource_q(usage.resource))
    return days


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


# GPU-seconds by (day, tenant, model) summed again in SQL: per model and day, per day for each
# of the `top` tenants with the most GPU-seconds (ties by slug, in code-point order as Python
# sorts) and for the rest together, and how many tenants there are. A few hundred rows
# whatever the fleet, where the rows by (day, tenant, model) are tens of thousands a month.
CHART_SQL = """
WITH rows AS ({rows}),
used AS (SELECT day, tenant_id, model, gpu_seconds FROM rows WHERE gpu_seconds <> 0),
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
    rows = (
        gpu_usage_days(usage)
        .annotate(model=model_of)
        .values("day", "tenant_id", "model")
        .annotate(gpu_seconds=Sum(_gpu_seconds("unit_seconds")))
        .order_by()
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
    tenants = 0
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
            else:
                tenants = int(gpu_seconds)
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
    )


# --- utilization and idle GPU-hours -----------------------------------------------------------


@dataclass(frozen=True)
class Utilization:
    """Allocated against measured GPU-seconds of one tenant (or the fleet) over a range."""

    allocated_seconds: int
    measured_seconds: int  # GPU-seconds DCGM saw the tenant's GPUs present
    busy_seconds: int  # ... weighted by their utilization
    idle_seconds: int  # allocated - busy, clamped at zero per tenant-hour
    tenant_slug: str = ""
    tenant_name: str = ""
    cost_center: str = ""

    @cached_property
    def utilization(self) -> Decimal | None:
        """The share of allocated GPU-seconds in use (0 to 1), as the calculations count it."""
        return calculations.utilization(
            allocated={"all": self.allocated_seconds},
            measured={"all": self.allocated_seconds - self.idle_seconds},
        )

    @cached_property
    def utilization_percent(self) -> Decimal | None:
        share = self.utilization
        return None if share is None else (share * 100).quantize(Decimal("0.1"))

    @cached_property
    def allocated_hours(self) -> Decimal:
        return hours(self.allocated_seconds)

    @cached_property
    def measured_hours(self) -> Decimal:
        return hours(self.measured_seconds)

    @cached_property
    def busy_hours(self) -> Decimal:
        return hours(self.busy_seconds)

    @cached_property
    def idle_hours(self) -> Decimal:
        return hours(self.idle_seconds)


def _measured_hours(usage: UsageFilter) -> QuerySet:
    """Hours of the range whose measured window is done: what DCGM saw is known."""
    return MeteringWindow.objects.filter(
        source=MEASURED, status=WindowStatus.DONE, hour__gte=usage.start, hour__lt=usage.end
    ).values("hour")


def _hourly_utilization_sql(usage: UsageFilter) -> tuple[str, tuple]:
    """Per (tenant, hour): allocated, measured and busy GPU-seconds, and the clamped idle."""
    records = UsageRecord.objects.filter(
        GPU_CLASSES, _tenant_q(usage), hour__gte=usage.start, hour__lt=usage.end
    ).filter(hour__in=_measured_hours(usage))
    if usage.resource:
        records = records.filter(_resource_q(usage.resource))
    hourly = (
        records.values("tenant_id", "hour")
        .annotate(
            allocated=Sum(_gpu_seconds("unit_seconds"), filter=Q(source=ALLOCATED), default=0.0),
            measured=Sum(_gpu_seconds("unit_seconds"), filter=Q(source=MEASURED), default=0.0),
            busy=Sum(_gpu_seconds("busy_seconds"), filter=Q(source=MEASURED), default=0.0),
        )
        .annotate(idle=Greatest(F("allocated") - F("busy"), Value(0.0)))
        .order_by()
    )
    sql, params = hourly.query.sql_with_params()
    return sql, params


PER_TENANT_SQL = (
    "SELECT t.slug, t.name, t.cost_center, SUM(h.allocated), SUM(h.measured), SUM(h.busy),"
    " SUM(h.idle) FROM ({hourly}) h JOIN {tenants} t ON t.id = h.tenant_id"
    " GROUP BY t.slug, t.name, t.cost_center"
    " ORDER BY SUM(h.allocated) DESC, t.name"
)


def utilization_by_tenant(usage: UsageFilter) -> list[Utilization]:
    """Allocated, measured, busy and idle GPU-seconds per tenant, most allocated first.

    One query: the hourly sums (clamped per tenant-hour) summed again per tenant, in SQL.
    """
    hourly, params = _hourly_utilization_sql(usage)
    tenants = connection.ops.quote_name(Tenant._meta.db_table)
    # Only Django's own SQL (its values passed as parameters) and a quoted table name go in.
    sql = PER_TENANT_SQL.format(hourly=hourly, tenants=tenants)
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        # Over millions of usage records the planner's estimate crosses PostgreSQL's JIT
        # threshold, and compiling the query (~50 ms) cost more than running it: not for a page.
        # (SET LOCAL lasts to the end of the transaction; no savepoint needed for it.)
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL jit = off")
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        Utilization(
            tenant_slug=slug, tenant_name=name, cost_center=cost_center,
            allocated_seconds=round(allocated or 0), measured_seconds=round(measured or 0),
            busy_seconds=round(busy or 0), idle_seconds=round(idle or 0),
        )
        for slug, name, cost_center, allocated, measured, busy, idle in rows
    ]


def utilization_total(rows: list[Utilization]) -> Utilization:
    """The sum of tenants' utilization: the fleet's (idle clamped per tenant-hour all the same)."""
    return Utilization(
        allocated_seconds=sum(row.allocated_seconds for row in rows),
        measured_seconds=sum(row.measured_seconds for row in rows),
        busy_seconds=sum(row.busy_seconds for row in rows),
        idle_seconds=sum(row.idle_seconds for row in rows),
    )


@dataclass(frozen=True)
class FleetHeadline:
    """The fleet's GPU utilization and idle GPU-hours over one period."""

    label: str
    start: datetime
    end: datetime
    total: Utilization


# The headline sums each closed UTC day once: a day's per-tenant sums are cached under a
# fingerprint of what they are computed from (its `UsageDaily` sums, kept by triggers on every
# write of usage, and its metering windows: done, latest metered), so a day whose usage or
# windows change is summed again. Each request then aggregates the hourly records of today (and
# of any day not cached) only, instead of a month of them.
PER_TENANT_DAY_SQL = (
    "SELECT h.tenant_id, {day}, SUM(h.allocated), SUM(h.measured),"
    " SUM(h.busy), SUM(h.idle) FROM ({hourly}) h GROUP BY 1, 2"
)
# The UTC day of an hour: SQLite (the demo) keeps times as UTC text.
UTC_DAY = {"postgresql": "(h.hour AT TIME ZONE 'UTC')::date", "sqlite": "date(h.hour)"}
HEADLINE_CACHE_SECONDS = 40 * 24 * 3600


def _day_fingerprints(first: date, last: date) -> dict[date, tuple]:
    """What each closed day's sums come from, in two queries whatever the data."""
    prints: dict[date, list] = defaultdict(list)
    sums = (
        UsageDaily.objects.filter(day__gte=first, day__lt=last)
        .values("day")
        .annotate(n=Count("id"), r=Sum("records"), u=Sum("unit_seconds"), b=Sum("busy_seconds"))
        .values_list("day", "n", "r", "u", "b")
        .order_by()
    )
    for day, *values in sums:
        prints[day] += values
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    end = datetime(last.year, last.month, last.day, tzinfo=UTC)
    windows = (
        MeteringWindow.objects.filter(hour__gte=start, hour__lt=end)
        .annotate(day=TruncDate("hour", tzinfo=UTC))
        .values("day")
        .annotate(
            n=Count("id"),
            done=Count("id", filter=Q(source=MEASURED, status=WindowStatus.DONE)),
            latest=Max("metered_at"),
        )
        .values_list("day", "n", "done", "latest")
        .order_by()
    )
    for day, n, done, latest in windows:
        prints[day] += ["w", n, done, latest.isoformat() if latest else ""]
    return {day: tuple(values) for day, values in prints.items()}


def _day_key(day: date, fingerprint: tuple) -> str:
    digest = hashlib.sha256(repr(fingerprint).encode()).hexdigest()[:32]
    return f"fleet-utilization:v1:{day.isoformat()}:{digest}"


def _tenant_days(start: datetime, end: datetime) -> dict[date, dict[int, list[float]]]:
    """Per UTC day and tenant: allocated, measured, busy and clamped idle GPU-seconds."""
    hourly, params = _hourly_utilization_sql(UsageFilter(start=start, end=end))
    days: dict[date, dict[int, list[float]]] = defaultdict(dict)
    with connection.cursor() as cursor:
        cursor.execute(
            PER_TENANT_DAY_SQL.format(hourly=hourly, day=UTC_DAY[connection.vendor]), params
        )
        for tenant_id, day, *values in cursor.fetchall():
            day = date.fromisoformat(day) if isinstance(day, str) else day
            days[day][tenant_id] = [value or 0.0 for value in values]
    return days


def _headline_days(first: date, today: date) -> dict[date, dict[int, list[float]]]:
    """The per-tenant sums of each day from `first` to `today`: closed days from the cache when
    their fingerprint still holds, the rest (today at least) summed in one query."""
    prints = _day_fingerprints(first, today)
    closed = [first + timedelta(days=n) for n in range((today - first).days)]
    keys = {day: _day_key(day, prints.get(day, ())) for day in closed}
    cached = cache.get_many(list(keys.values()))
    days = {day: cached[key] for day, key in keys.items() if key in cached}
    missing = [day for day in closed if day not in days]
    since = min(missing, default=today)
    start = datetime(since.year, since.month, since.day, tzinfo=UTC)
    fresh = _tenant_days(start, datetime.combine(today, time(), UTC) + timedelta(days=1))
    cache.set_many(
        {keys[day]: fresh.get(day, {}) for day in missing}, timeout=HEADLINE_CACHE_SECONDS
    )
    for day in (*missing, today):
        days[day] = fresh.get(day, {})
    return days


def fleet_utilization_headline(*, now: datetime) -> list[FleetHeadline]:
    """The last 7 days and this month so far, for the fleet overview: the figures of
    `utilization_by_tenant` over each period, from the per-day sums (three queries)."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    end = today + timedelta(days=1)
    periods = [("Last 7 days", end - timedelta(days=7)), ("This month", month_start(today))]
    days = _headline_days(min(start for _, start in periods).date(), today.date())
    headlines = []
    for label, start in periods:
        per_tenant: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
        for day, tenants in days.items():
            if day >= start.date():
                for tenant_id, values in tenants.items():
                    sums = per_tenant[tenant_id]
                    for i, value in enumerate(values):
                        sums[i] += value
        rows = [
            Utilization(
                allocated_seconds=round(a), measured_seconds=round(m),
                busy_seconds=round(b), idle_seconds=round(i),
            )
            for a, m, b, i in per_tenant.values()
        ]
        headlines.append(FleetHeadline(label, start, end, utilization_total(rows)))
    return headlines


# --- metering health ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeteringHealth:
    """What admins must look into: metering windows not done, and flagged OpenCost checks."""

    windows: list[MeteringWindow]
    windows_total: int
    gaps_total: int
    measured_hours: int  # hours of the range whose measured window is done
    cross_checks: list[CrossCheck]
    cross_checks_total: int
    unmeasured_hours: int = 0  # closed hours left out of utilization: no measured window done
    # Host-hours whose measured GPU time was capped by the host's GPUs (`metering_caps`).
    capped: list[MeteringFlag] = field(default_factory=list)
    capped_total: int = 0

    def as_of(self, usage: UsageFilter, now: datetime) -> MeteringHealth:
        """The same, with the hours unmeasured by `now` (the hour under way is metered once
        closed)."""
        closed_until = min(usage.end, floor_hour(now))
        closed = max(0, int((closed_until - usage.start).total_seconds()) // SECONDS_PER_HOUR)
        return replace(self, unmeasured_hours=max(0, closed - self.measured_hours))


def metering_health(usage: UsageFilter, *, now: datetime, limit: int = 12) -> MeteringHealth:
    """Gaps (and pending windows) in the range, hours without a measurement, flagged
    cross-checks of the filtered tenants, and host-hours whose measured GPU time was capped by
    the inventory, newest first, at most `limit` of each: six queries whatever the data."""
    return _metering_health(usage, limit=limit).as_of(usage, now)


def _metering_health(usage: UsageFilter, *, limit: int = 12) -> MeteringHealth:
    in_range = MeteringWindow.objects.filter(hour__gte=usage.start, hour__lt=usage.end)
    counts = in_range.aggregate(
        total=Count("id", filter=~Q(status=WindowStatus.DONE)),
        gaps=Count("id", filter=Q(status=WindowStatus.GAP)),
        measured=Count("id", filter=Q(source=MEASURED, status=WindowStatus.DONE)),
    )
    windows = in_range.exclude(status=WindowStatus.DONE)
    checks = CrossCheck.objects.filter(
        _tenant_q(usage), flagged=True, hour__gte=usage.start, hour__lt=usage.end
    )
    # Written with the measured windows they belong to: the range's stamps move with them.
    capped = MeteringFlag.objects.filter(
        kind=MeteringFlag.Kind.MEASURED_CAPPED, hour__gte=usage.start, hour__lt=usage.end
    )
    return MeteringHealth(
        windows=list(windows.order_by("-hour", "source")[:limit]),
        windows_total=counts["total"],
        gaps_total=counts["gaps"],
        measured_hours=counts["measured"],
        cross_checks=list(
            checks.select_related("tenant").order_by("-hour", "tenant__name")[:limit]
        ),
        cross_checks_total=checks.count(),
        capped=list(capped.order_by("-hour", "hostname")[:limit]),
        capped_total=capped.count(),
    )


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
    return f"usage-explorer:v1:{hashlib.sha256(what.encode()).hexdigest()[:32]}:{stamp}"


def _worked_out(rows: list, *names: str) -> list:
    """`rows` with the cached properties `names` worked out (so that they are cached too)."""
    for row in rows:
        for name in names:
            getattr(row, name)
    return rows


UTILIZATION_FIGURES = ("utilization_percent", "allocated_hours", "measured_hours", "busy_hours",
                       "idle_hours")


def explorer_summary(usage: UsageFilter) -> ExplorerSummary:
    """The summary computed afresh (nine queries whatever the data)."""
    chart = gpu_hours_chart(usage)
    utilization = _worked_out(utilization_by_tenant(usage), *UTILIZATION_FIGURES)
    return ExplorerSummary(
        rows_total=gpu_usage_by_tenant_and_class(usage).count(),
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
    the range's stamp holds, else computed (twelve queries whatever the data; three when only
    the page of the table is not cached)."""
    stamp = usage_stamp(usage)
    summary_key = _explorer_key(usage, stamp)
    requested = _page_number(page)
    page_key = f"{summary_key}:page:{requested}"
    cached = cache.get_many([summary_key, page_key])
    fresh = {}
    summary = cached.get(summary_key)
    if summary is None:
        summary = fresh[summary_key] = explorer_summary(usage)
    table = cached.get(page_key)
    if table is None:
        table = fresh[page_key] = _table_page(usage, summary.rows_total, requested)
    if fresh and usage_stamp(usage) == stamp:
        cache.set_many(fresh, timeout=EXPLORER_CACHE_SECONDS)
    number, rows = table
    paginator = Paginator(_Rows(summary.rows_total), EXPLORER_PAGE_SIZE)
    return Explorer(
        summary=summary,
        page=Page(rows, number, paginator),
        health=summary.health.as_of(usage, now),
    )
