"""Downtime credit: the GPU time a tenant spent on a host while it had an open critical event.

`measured` is what DCGM saw the tenant use, as GPU unit-seconds per (hostname, resource class,
UTC hour start), read from the dcgm-exporter series' host label. `events` are the intervals of
the host's *critical* health events (open ones have no end). A host with several critical
events at once is credited once for the time they overlap.

Assumption: within an hour, usage is uniform. Measured series are hourly, so the hour's
unit-seconds are credited in proportion to the part of the hour the host spent under an open
critical event: 1 800 GPU-seconds in an hour half of which the host was failing credit 900.
Each (hour, class) credit is rounded to the whole second, half up, before it is summed; the
money is rounded once per credit line, at the rate in force during the hour credited.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import NamedTuple

from .invoicing import InvoiceLine, UsageAmount, priced_usage
from .money import HOUR, SECONDS_PER_HOUR, floor_hour, require_aware, round_to, seconds_between
from .rates import Rate

_SECOND = Decimal(1)

MeasuredUsage = Mapping[tuple[str, str, datetime], int]
"""GPU unit-seconds per (hostname, resource class, UTC hour start)."""


class CriticalEvent(NamedTuple):
    """An open-or-closed critical health event on a host; `end` None while it is open."""

    hostname: str
    start: datetime
    end: datetime | None


def _merged(events: Iterable[CriticalEvent]) -> dict[str, list[tuple[datetime, datetime | None]]]:
    by_host: dict[str, list[tuple[datetime, datetime | None]]] = defaultdict(list)
    for hostname, start, end in events:
        start = require_aware(start, "event start")
        end = None if end is None else require_aware(end, "event end")
        if end is not None and end < start:
            raise ValueError(f"A health event on {hostname} ends before it starts.")
        by_host[hostname].append((start, end))
    merged: dict[str, list[tuple[datetime, datetime | None]]] = {}
    for hostname, intervals in by_host.items():
        intervals.sort(key=lambda interval: interval[0])
        union: list[tuple[datetime, datetime | None]] = []
        for start, end in intervals:
            if union and (union[-1][1] is None or start <= union[-1][1]):
                last_start, last_end = union[-1]
                longer = None if None in (last_end, end) else max(last_end, end)
                union[-1] = (last_start, longer)
            else:
                union.append((start, end))
        merged[hostname] = union
    return merged


def _seconds_down(hour: datetime, intervals: list[tuple[datetime, datetime | None]]) -> int:
    hour_end = hour + HOUR
    down = 0
    for start, end in intervals:
        overlap_start = max(start, hour)
        overlap_end = hour_end if end is None else min(end, hour_end)
        if overlap_end > overlap_start:
            down += seconds_between(overlap_start, overlap_end)
    return down


def downtime_credit_by_hour(
    measured: MeasuredUsage, events: Iterable[CriticalEvent]
) -> dict[tuple[datetime, str], int]:
    """Credited GPU unit-seconds per (UTC hour start, resource class), summed over hosts."""
    intervals = _merged(events)
    credit: dict[tuple[datetime, str], int] = defaultdict(int)
    for (hostname, resource, hour), seconds in measured.items():
        hour = floor_hour(require_aware(hour, "hour start"))
        if not intervals.get(hostname) or seconds <= 0:
            continue
        down = _seconds_down(hour, intervals[hostname])
        if down:
            share = Fraction(seconds * down, SECONDS_PER_HOUR)
            credit[hour, resource] += int(round_to(share, _SECOND))
    return {key: seconds for key, seconds in credit.items() if seconds}


def seconds_down(events: Iterable[CriticalEvent]) -> Callable[[str, datetime], int]:
    """(hostname, UTC hour start) → the seconds of that hour the host spent under an open
    critical event (overlapping events counted once)."""
    intervals = _merged(events)

    def down(hostname: str, hour: datetime) -> int:
        return _seconds_down(hour, intervals.get(hostname, []))

    return down


def downtime_credit_seconds(
    measured: MeasuredUsage, events: Iterable[CriticalEvent]
) -> dict[str, int]:
    """Credited GPU unit-seconds per resource class (the sum of `downtime_credit_by_hour`)."""
    totals: dict[str, int] = defaultdict(int)
    for (_hour, resource), seconds in downtime_credit_by_hour(measured, events).items():
        totals[resource] += seconds
    return dict(totals)


def credit_lines(
    credit_seconds: Mapping[tuple[datetime, str], int],
    rates: Iterable[Rate],
    *,
    period_start: datetime,
    period_end: datetime,
) -> tuple[InvoiceLine, ...]:
    """Negative lines for credited unit-seconds, at the rate in force in each hour credited.

    One line per class and rate period, rounded once, like usage lines. An hour with no rate
    earns no credit line: its usage was not billed either (it shows as unpriced).
    """
    credited = (
        UsageAmount(resource, hour, seconds) for (hour, resource), seconds in credit_seconds.items()
    )
    priced = priced_usage(
        credited, rates, period_start=period_start, period_end=period_end, kind="credit"
    )
    return priced.lines
