"""The allocated source computed and written by PostgreSQL: one INSERT ... SELECT for a span.

`metering_allocated` reads the workloads' histories into Python and cuts them with the pure
`calculations`; for a span of hours that is thousands of rows read, computed and copied back.
Here the same cut runs in the database, row for row the same records (tests compare the two on
random histories), and nothing crosses the wire but the hours' totals:

- a workload is billed from its first `ready` transition (else `ready_at`) until its first
  `deleted` transition (else `deleted_at`), the same cheap pre-filter on `deleted_at` first;
- from the later of that moment and the span's start it holds the demand of its last event at
  or before then (by time, then id; the workload's own demand without one), then each event's
  demand after it, before the end of billing and of the span;
- only the billable part of a demand counts (`billable_demand`): classes other than `count:*`
  and the empty name, in whole units ≥ 0 as JSON writes integers (not 2.0, not true);
- every interval is cut to whole seconds, then on UTC hour boundaries (Django's connection runs
  in UTC), unit-seconds summed per workload, hour and class, and kept where above zero;
- each record carries its workload's cluster, launcher and label.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from tenants.workloads.models import Workload, WorkloadEvent, WorkloadStatus

from ..calculations.money import HOUR
from ..models import UsageRecord
from .metering_allocated import COUNT_PREFIX


def _sql() -> str:
    workload, event = Workload._meta.db_table, WorkloadEvent._meta.db_table
    usage = UsageRecord._meta.db_table
    return f"""
    WITH billed AS MATERIALIZED (
        SELECT w.id, w.tenant_id, w.cluster_id, w.launched_by_id, w.label, w.demand,
               COALESCE((SELECT e.created_at FROM {event} e
                         WHERE e.workload_id = w.id AND e.kind = %(transition)s
                           AND e.to_status = %(ready)s
                         ORDER BY e.created_at, e.id LIMIT 1), w.ready_at) AS billed_from,
               COALESCE((SELECT e.created_at FROM {event} e
                         WHERE e.workload_id = w.id AND e.kind = %(transition)s
                           AND e.to_status = %(deleted)s
                         ORDER BY e.created_at, e.id LIMIT 1), w.deleted_at) AS billed_until
        FROM {workload} w
        WHERE w.deleted_at IS NULL OR w.deleted_at >= %(margin)s
    ), holding AS (
        SELECT id, tenant_id, cluster_id, launched_by_id, label, demand, billed_until,
               GREATEST(billed_from, %(start)s) AS since,
               LEAST(COALESCE(billed_until, %(end)s), %(end)s) AS until
        FROM billed
        WHERE billed_from < %(end)s AND (billed_until IS NULL OR billed_until > %(start)s)
          AND NOT (billed_until IS NOT NULL
                   AND billed_until <= GREATEST(billed_from, %(start)s))
    ), changes AS (
        SELECT h.id, h.tenant_id, h.cluster_id, h.launched_by_id, h.label, h.since AS at,
               0::bigint AS event_id,
               COALESCE((SELECT e.demand FROM {event} e
                         WHERE e.workload_id = h.id AND e.created_at <= h.since
                         ORDER BY e.created_at DESC, e.id DESC LIMIT 1), h.demand) AS demand,
               h.billed_until
        FROM holding h
        UNION ALL
        SELECT h.id, h.tenant_id, h.cluster_id, h.launched_by_id, h.label, e.created_at, e.id,
               e.demand, h.billed_until
        FROM holding h JOIN {event} e ON e.workload_id = h.id
             AND e.created_at > h.since AND e.created_at < h.until
    ), intervals AS (
        SELECT id, tenant_id, cluster_id, launched_by_id, label, demand,
               GREATEST(date_trunc('second', at), %(start)s) AS starts,
               LEAST(date_trunc('second', COALESCE(
                   LEAD(at) OVER (PARTITION BY id ORDER BY at, event_id),
                   CASE WHEN billed_until < %(end)s THEN billed_until END,
                   %(end)s)), %(end)s) AS ends
        FROM changes
    ), held AS (
        SELECT i.id, i.tenant_id, i.cluster_id, i.launched_by_id, i.label, i.starts, i.ends,
               d.key AS resource,
               (d.value #>> '{{}}')::numeric AS units
        FROM intervals i, jsonb_each(
            CASE WHEN jsonb_typeof(i.demand) = 'object' THEN i.demand ELSE '{{}}' END) d
        WHERE i.ends > i.starts AND d.key <> '' AND left(d.key, %(count_len)s) <> %(count)s
          AND jsonb_typeof(d.value) = 'number' AND d.value::text ~ '^[0-9]+$'
          AND d.value::text !~ '^0+$'
    ), cut AS (
        SELECT id, tenant_id, cluster_id, launched_by_id, label, resource, h.hour,
               SUM(units * EXTRACT(EPOCH FROM LEAST(ends, h.hour + INTERVAL '1 hour')
                                             - GREATEST(starts, h.hour))) AS seconds
        FROM held, generate_series(date_trunc('hour', starts), ends - INTERVAL '1 second',
                                   INTERVAL '1 hour') AS h(hour)
        GROUP BY id, tenant_id, cluster_id, launched_by_id, label, resource, h.hour
    ), written AS (
        INSERT INTO {usage} (tenant_id, workload_id, hostname, source, resource, hour,
                             unit_seconds, busy_seconds, metered_at, cluster, launched_by_id,
                             label)
        SELECT tenant_id, id, '', %(source)s, resource, hour, seconds::bigint, 0, %(now)s,
               cluster_id, launched_by_id, label
        FROM cut WHERE seconds > 0
        ORDER BY id, hour, resource
        RETURNING hour, unit_seconds, workload_id
    )
    SELECT hour, COUNT(*), SUM(unit_seconds), COUNT(DISTINCT workload_id) FROM written
    GROUP BY ROLLUP (hour)
    """  # noqa: S608 (table names from the models)


def allocated_insert(
    *, start: datetime, end: datetime, now: datetime
) -> tuple[dict[datetime, tuple[int, int]], int]:
    """Write the allocated records of whole hours [start, end), which must hold none yet.
    Returns (records, unit-seconds) per hour that has any, and how many workloads they are
    for."""
    params = {
        "transition": WorkloadEvent.Kind.TRANSITION,
        "ready": WorkloadStatus.READY,
        "deleted": WorkloadStatus.DELETED,
        "start": start,
        "end": end,
        "margin": start - HOUR,
        "count": COUNT_PREFIX,
        "count_len": len(COUNT_PREFIX),
        "source": UsageRecord.Source.ALLOCATED,
        "now": now,
    }
    with connection.cursor() as cursor:
        # No JIT for this one statement: the correlated subqueries make the planner's estimate
        # large enough to compile it, which took longer (~0.2 s) than running it.
        cursor.execute("SELECT current_setting('jit'), set_config('jit', 'off', true)")
        jit = cursor.fetchone()[0]
        cursor.execute(_sql(), params)
        rows = cursor.fetchall()
        cursor.execute("SELECT set_config('jit', %s, true)", [jit])
    per_hour = {hour: (count, int(seconds)) for hour, count, seconds, _ in rows if hour}
    workloads = next((count for hour, _, _, count in rows if hour is None), 0)
    return per_hour, workloads
