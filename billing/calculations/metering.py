"""Allocation metering: what a workload held, as unit-seconds per UTC hour and resource class.

A workload's life is a list of `Allocation`s: from ready to deleted, each scale change (mid-hour
or not) starts a new interval, and a stopped VM goes on holding its disk (an interval whose
demand is only `storage-gib`). `allocated_seconds` cuts every interval exactly on UTC hour
boundaries, so the hourly usage records built from it neither lose nor double a unit-second.

Timestamps are truncated to the whole second (Kubernetes reports whole seconds), which keeps
every bucket an exact integer. Any resource-class key is metered as given: whether it has a
price is the rate card's business, not the meter's.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from .money import HOUR, floor_hour, require_aware, seconds_between


@dataclass(frozen=True)
class Allocation:
    """One interval of a workload's life during which it held `demand` (class → units).

    `end` is None while the interval is still open (the workload still holds its resources).
    """

    start: datetime
    end: datetime | None
    demand: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        start = require_aware(self.start, "Allocation start")
        end = None if self.end is None else require_aware(self.end, "Allocation end")
        if end is not None and end < start:
            raise ValueError(
                f"Allocation ends ({end.isoformat()}) before it starts ({start.isoformat()})."
            )
        for resource, units in self.demand.items():
            if not isinstance(resource, str) or not resource:
                raise ValueError(f"Resource class must be a non-empty string, got {resource!r}.")
            if isinstance(units, bool) or not isinstance(units, int) or units < 0:
                raise ValueError(f"Units of {resource} must be a whole number ≥ 0, got {units!r}.")
        object.__setattr__(self, "demand", MappingProxyType(dict(self.demand)))


def allocation_history(
    changes: Sequence[tuple[datetime, Mapping[str, int]]], *, ended_at: datetime | None = None
) -> list[Allocation]:
    """The allocations of one workload from its demand changes, in time order.

    Each change `(at, demand)` — ready, scaled, stopped (disk only) — holds until the next one;
    the last holds until `ended_at` (deletion) or stays open.
    """
    ordered = sorted(changes, key=lambda change: require_aware(change[0], "change time"))
    allocations = []
    for index, (at, demand) in enumerate(ordered):
        end = ordered[index + 1][0] if index + 1 < len(ordered) else ended_at
        allocations.append(Allocation(start=at, end=end, demand=demand))
    return allocations


def allocated_seconds(
    allocations: Iterable[Allocation], *, window_start: datetime, window_end: datetime
) -> dict[tuple[datetime, str], int]:
    """Unit-seconds per (UTC hour start, resource class) held within [window_start, window_end).

    Open intervals run to `window_end`. A partial hour counts its seconds; classes with zero
    units give no bucket.
    """
    window_start = require_aware(window_start, "window_start").replace(microsecond=0)
    window_end = require_aware(window_end, "window_end").replace(microsecond=0)
    if window_end < window_start:
        raise ValueError("window_end is before window_start.")
    buckets: dict[tuple[datetime, str], int] = defaultdict(int)
    for allocation in allocations:
        held = {resource: units for resource, units in allocation.demand.items() if units}
        start = max(require_aware(allocation.start, "start").replace(microsecond=0), window_start)
        end = window_end
        if allocation.end is not None:
            end = min(require_aware(allocation.end, "end").replace(microsecond=0), window_end)
        if not held or end <= start:
            continue
        hour = floor_hour(start)
        while hour < end:
            seconds = seconds_between(max(start, hour), min(end, hour + HOUR))
            for resource, units in held.items():
                buckets[hour, resource] += seconds * units
            hour += HOUR
    return dict(buckets)
