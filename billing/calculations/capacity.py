"""What a host can have used in an hour: its GPUs, never more.

Measured usage (DCGM's GPU-seconds per tenant, host and class) and the downtime credit drawn
from it are capped by the GPUs the inventory says the host has: within one hour a host of 8
GPUs was used for at most 8 x 3 600 GPU-seconds, and during a 20-minute outage for at most
8 x 1 200. A class counts by the part of a GPU one unit of it takes (`gpu_share`): a whole GPU
1, a MIG instance of g compute slices g/7 (every MIG-capable model has seven).

When a host-hour is over, every amount on it is scaled down by the same factor (rounded down
to the whole second, so the kept sum never exceeds the capacity), and the cap is reported so
that the metering flags it. A host the caller gives no capacity for is left as it is.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import TypeVar

MIG_SLICES = 7
Key = TypeVar("Key", bound=Hashable)


def gpu_share(resource: str) -> Fraction:
    """The part of a whole GPU one unit of `resource` takes (`gpu:…` 1, `mig:…:3g.40gb` 3/7)."""
    kind, _, rest = resource.partition(":")
    if kind == "mig":
        profile = rest.rpartition(":")[2]
        slices = profile.partition("g.")[0]
        if slices.isdigit() and 0 < int(slices) <= MIG_SLICES:
            return Fraction(int(slices), MIG_SLICES)
    return Fraction(1)


@dataclass(frozen=True)
class CappedHour:
    """One host-hour whose amounts were more than its GPUs allow, in GPU-seconds."""

    hostname: str
    hour: datetime
    gpus: int
    capacity_seconds: int
    reported_seconds: int
    kept_seconds: int


def cap_to_capacity(
    seconds: Mapping[Key, int],
    *,
    host_hour: Callable[[Key], tuple[str, datetime]],
    resource: Callable[[Key], str],
    gpus: Mapping[str, int],
    capacity: Callable[[str, datetime], int],
) -> tuple[dict[Key, int], list[CappedHour]]:
    """`seconds` with each host-hour's GPU-weighted sum kept within `capacity(host, hour)`
    GPU-seconds (for hosts in `gpus`), and the host-hours that were capped, in order."""
    groups: dict[tuple[str, datetime], list[Key]] = defaultdict(list)
    for key in seconds:
        groups[host_hour(key)].append(key)
    kept = dict(seconds)
    capped: list[CappedHour] = []
    for (hostname, hour), keys in sorted(groups.items()):
        if hostname not in gpus:
            continue
        limit = max(0, capacity(hostname, hour))
        total = sum(gpu_share(resource(key)) * seconds[key] for key in keys)
        if total <= limit:
            continue
        factor = Fraction(limit) / total
        for key in keys:
            kept[key] = math.floor(seconds[key] * factor)
        capped.append(CappedHour(
            hostname=hostname, hour=hour, gpus=gpus[hostname], capacity_seconds=limit,
            reported_seconds=math.ceil(total),
            kept_seconds=math.floor(sum(gpu_share(resource(k)) * kept[k] for k in keys)),
        ))
    return kept, capped
