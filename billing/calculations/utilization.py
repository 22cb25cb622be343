"""Utilization: how much of what a tenant reserved it actually used.

`allocated` (what was reserved, from allocation metering) and `measured` (what DCGM saw in use)
are unit-seconds under the same keys — typically (tenant, GPU resource class), or with the hour
as well. Idle time is clamped at zero per key, so an hour measured above its allocation (clock
skew between the meter and DCGM) never hides idle time elsewhere: pass hourly keys to clamp
hour by hour.
"""

from collections.abc import Hashable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import TypeVar

from .money import round_to

Key = TypeVar("Key", bound=Hashable)
RATIO = Decimal("0.0001")


def idle_gpu_seconds(
    *, allocated: Mapping[Key, int], measured: Mapping[Key, int]
) -> dict[Key, int]:
    """Reserved but unused unit-seconds per key: allocated - measured, never negative."""
    return {key: max(0, seconds - measured.get(key, 0)) for key, seconds in allocated.items()}


def utilization(*, allocated: Mapping[Key, int], measured: Mapping[Key, int]) -> Decimal | None:
    """The share (0 to 1, to 4 places) of allocated unit-seconds in use; None if none allocated.

    Equals 1 - idle / allocated, with idle as `idle_gpu_seconds` counts it.
    """
    total = sum(allocated.values())
    if total <= 0:
        return None
    idle = sum(idle_gpu_seconds(allocated=allocated, measured=measured).values())
    return round_to(Fraction(total - idle, total), RATIO)
