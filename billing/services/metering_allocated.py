"""The allocated source: what each workload held within one UTC hour, read from its history.

A workload is billed from the moment it first became ready (its first `transition` event to
`ready`; `Workload.ready_at` when no such event exists) until it was deleted (its `transition`
to `deleted`; `Workload.deleted_at`), whatever happened in between (provisioning again after a
scale, degraded, failed): it held its quota all along. Before ready nothing is billed — a launch
that never came up costs nothing. Each event carries the demand in force after it (a scale, a
VM stopped to its disk), so the demand at any moment is the one of the last event at or before
it, and the pure `calculations.allocated_seconds` cuts the hour exactly.

Reads only, in a constant number of queries whatever the number of workloads: the workloads
that held anything during the hour (one query, with their first ready and deleted events as
subqueries), then their events of the hour together with each one's last event before it (one
query). `count:*` classes (how many workloads a tenant runs) are quota, not usage: left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from tenants.workloads.models import Workload, WorkloadEvent, WorkloadStatus

from .. import calculations
from ..calculations.money import HOUR

COUNT_PREFIX = "count:"


@dataclass(frozen=True)
class AllocatedUsage:
    """Unit-seconds of one resource class one workload held within the hour."""

    tenant_id: int
    workload_id: int
    resource: str
    unit_seconds: int


def billable_demand(demand: Mapping[str, Any] | None) -> dict[str, int]:
    """The metered part of a stored demand: whole units ≥ 0, quota counters left out."""
    held = {}
    for resource, units in (demand or {}).items():
        if not isinstance(resource, str) or not resource or resource.startswith(COUNT_PREFIX):
            continue
        if isinstance(units, bool) or not isinstance(units, int) or units < 0:
            continue  # never written by a kind's demand(); refused rather than guessed at
        held[resource] = units
    return held


def _first_transition(status: str) -> Subquery:
    return Subquery(
        WorkloadEvent.objects.filter(
            workload=OuterRef("pk"), kind=WorkloadEvent.Kind.TRANSITION, to_status=status
        )
        .order_by("created_at", "id")
        .values("created_at")[:1]
    )


def _workloads_holding(start: datetime, end: datetime) -> list[dict]:
    last_before = Subquery(
        WorkloadEvent.objects.filter(workload=OuterRef("pk"), created_at__lt=start)
        .order_by("-created_at", "-id")
        .values("id")[:1]
    )
    return list(
        # A cheap test of its column leaves out every workload deleted long ago (the column is
        # set with the deleted event, a moment before it: an hour is margin enough).
        Workload.objects.filter(Q(deleted_at__isnull=True) | Q(deleted_at__gte=start - HOUR))
        .annotate(
            billed_from=Coalesce(_first_transition(WorkloadStatus.READY), F("ready_at")),
            billed_until=Coalesce(_first_transition(WorkloadStatus.DELETED), F("deleted_at")),
            event_before=last_before,
        )
        .filter(billed_from__lt=end)
        .filter(Q(billed_until__isnull=True) | Q(billed_until__gt=start))
        .order_by("pk")
        .values("pk", "tenant_id", "demand", "billed_from", "billed_until", "event_before")
    )


def _events(workloads: list[dict], start: datetime, end: datetime) -> dict[int, list[tuple]]:
    """(created_at, id, demand) per workload, in time order: the hour's events and the last
    one before it."""
    ids = [w["pk"] for w in workloads]
    before = [w["event_before"] for w in workloads if w["event_before"] is not None]
    rows = (
        WorkloadEvent.objects.filter(
            Q(workload_id__in=ids, created_at__gte=start, created_at__lt=end) | Q(pk__in=before)
        )
        .order_by("created_at", "id")
        .values_list("workload_id", "created_at", "id", "demand")
    )
    by_workload: dict[int, list[tuple]] = defaultdict(list)
    for workload_id, created_at, event_id, demand in rows:
        by_workload[workload_id].append((created_at, event_id, demand))
    return by_workload


def _changes(workload: dict, events: list[tuple], start: datetime, end: datetime) -> list:
    """The demand changes of one workload within the hour: what it held from the later of its
    ready moment and the hour's start, then each event after that (before its deletion)."""
    since = max(workload["billed_from"], start)
    until = workload["billed_until"] or end
    held_at_since = workload["demand"]
    for created_at, _, demand in events:
        if created_at <= since:
            held_at_since = demand
    changes = [(since, billable_demand(held_at_since))]
    changes += [
        (created_at, billable_demand(demand))
        for created_at, _, demand in events
        if since < created_at < until
    ]
    return changes


def allocated_usage(*, hour: datetime) -> list[AllocatedUsage]:
    """Unit-seconds per workload and resource class held within [hour, hour + 1 h)."""
    return [usage for _, usage in allocated_usage_between(start=hour, end=hour + HOUR)]


def allocated_usage_between(
    *, start: datetime, end: datetime
) -> list[tuple[datetime, AllocatedUsage]]:
    """(hour, usage) per workload, resource class and UTC hour within [start, end), whole
    hours: the same cut as hour by hour, read in the same two queries for the whole span."""
    return [
        (hour, AllocatedUsage(tenant_id, workload_id, resource, seconds))
        for hour, tenant_id, workload_id, resource, seconds in allocated_rows(start=start, end=end)
    ]


def allocated_rows(*, start: datetime, end: datetime) -> list[tuple[datetime, int, int, str, int]]:
    """`allocated_usage_between` as plain tuples (hour, tenant, workload, class, unit-seconds),
    for writing thousands of records without an object each."""
    workloads = _workloads_holding(start, end)
    events = _events(workloads, start, end) if workloads else {}
    rows = []
    for workload in workloads:
        ended = workload["billed_until"]
        if ended is not None and ended <= max(workload["billed_from"], start):
            continue  # deleted the moment it became ready: nothing held
        history = calculations.allocation_history(
            _changes(workload, events.get(workload["pk"], []), start, end),
            ended_at=ended if ended is not None and ended < end else None,
        )
        buckets = calculations.allocated_seconds(history, window_start=start, window_end=end)
        tenant_id, workload_id = workload["tenant_id"], workload["pk"]
        rows += [
            (hour, tenant_id, workload_id, resource, seconds)
            for (hour, resource), seconds in sorted(buckets.items())
            if seconds > 0
        ]
    return rows
