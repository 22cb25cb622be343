"""The health of metering over the explorer's range."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db.models import (
    Count,
    Q,
)

from ...calculations.money import SECONDS_PER_HOUR, floor_hour
from ...models import (
    CrossCheck,
    MeteringFlag,
    MeteringWindow,
    WindowStatus,
)
from .filters import MEASURED, UsageFilter, _tenant_q

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
