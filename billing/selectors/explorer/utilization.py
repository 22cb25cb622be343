"""Allocated against measured utilization, idle GPU-hours, and the fleet's headline."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from functools import cached_property

from django.db import connection, transaction
from django.db.models import (
    Count,
    F,
    Max,
    Q,
    QuerySet,
    Sum,
    Value,
)
from django.db.models.functions import Greatest, TruncDate

from core import caching
from tenants.models import Tenant

from ... import calculations
from ...calculations.money import month_start
from ...models import (
    MeteringWindow,
    UsageDaily,
    UsageRecord,
    WindowStatus,
)
from .filters import (
    ALLOCATED,
    GPU_CLASSES,
    MEASURED,
    UsageFilter,
    _gpu_seconds,
    _resource_q,
    _tenant_q,
    hours,
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
    return caching.key("fleet-utilization", "v1", day.isoformat(), digest)


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
    cached = caching.get_many("fleet-utilization", keys.values())
    days = {day: cached[key] for day, key in keys.items() if key in cached}
    missing = [day for day in closed if day not in days]
    since = min(missing, default=today)
    start = datetime(since.year, since.month, since.day, tzinfo=UTC)
    fresh = _tenant_days(start, datetime.combine(today, time(), UTC) + timedelta(days=1))
    caching.set_many(
        "fleet-utilization",
        {keys[day]: fresh.get(day, {}) for day in missing},
        timeout=HEADLINE_CACHE_SECONDS,
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
