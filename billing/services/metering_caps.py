"""Measured usage capped by the GPUs each host has in the inventory, and the flags that say so.

DCGM (or a generator standing in for it) may report more GPU-seconds on a host than its GPUs
allow in an hour: a series counted twice, a pod relabelled mid-scrape, a host whose GPUs the
inventory does not list yet. Stored as it came, that time would be billed back as downtime
credit beyond the outage. So before a measured window is stored, each host-hour is capped at
its GPUs x 3 600 GPU-seconds (`calculations.capacity`), and every capped host-hour becomes a
`MeteringFlag` beside the window (replaced when the window is metered again). A host the
inventory does not know keeps what was measured: it has no GPU count to cap by, and it cannot
earn downtime credit (that needs a critical event on an inventory node).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import datetime

from django.db.models import Count
from django.utils import timezone

from inventory.models import GPU

from ..calculations.capacity import CappedHour, cap_to_capacity
from ..calculations.money import SECONDS_PER_HOUR
from ..models import MeteringFlag
from .metering_measured import MeasuredUsage

MEASURED_CAPPED = MeteringFlag.Kind.MEASURED_CAPPED


def host_gpus(hostnames: Iterable[str]) -> dict[str, int]:
    """How many GPUs the inventory lists on each of `hostnames` it knows (one query)."""
    names = sorted({name for name in hostnames if name})
    if not names:
        return {}
    rows = (
        GPU.objects.filter(node__hostname__in=names)
        .values("node__hostname").annotate(gpus=Count("id")).order_by()
    )
    return {row["node__hostname"]: row["gpus"] for row in rows}


def measured_capped(
    usage: Mapping[datetime, list[MeasuredUsage]],
) -> tuple[dict[datetime, list[MeasuredUsage]], list[CappedHour]]:
    """Each hour's measured usage with every host-hour within its GPUs (busy seconds scaled
    alike, never above the unit seconds), and the host-hours capped."""
    gpus = host_gpus(u.hostname for rows in usage.values() for u in rows)
    keyed = {(hour, index): row for hour, rows in usage.items() for index, row in enumerate(rows)}
    kept, capped = cap_to_capacity(
        {key: row.unit_seconds for key, row in keyed.items()},
        host_hour=lambda key: (keyed[key].hostname, key[0]),
        resource=lambda key: keyed[key].resource,
        gpus=gpus,
        capacity=lambda hostname, hour: gpus[hostname] * SECONDS_PER_HOUR,
    )
    result: dict[datetime, list[MeasuredUsage]] = {hour: [] for hour in usage}
    for key, row in keyed.items():
        unit = kept[key]
        if unit != row.unit_seconds:
            busy = min(unit, row.busy_seconds * unit // row.unit_seconds if row.unit_seconds else 0)
            row = dataclasses.replace(row, unit_seconds=unit, busy_seconds=busy)
        if row.unit_seconds > 0:
            result[key[0]].append(row)
    return result, capped


def measured_flags_replace(*, hours: list[datetime], capped: list[CappedHour]) -> None:
    """The measured-cap flags of `hours`, in place of the ones they had."""
    MeteringFlag.objects.filter(kind=MEASURED_CAPPED, hour__in=hours).delete()
    now = timezone.now()
    MeteringFlag.objects.bulk_create(
        [
            MeteringFlag(
                kind=MEASURED_CAPPED, hour=cap.hour, hostname=cap.hostname, gpus=cap.gpus,
                capacity_seconds=cap.capacity_seconds, reported_seconds=cap.reported_seconds,
                kept_seconds=cap.kept_seconds, flagged_at=now,
            )
            for cap in capped
        ],
        batch_size=2000,
    )
