"""The hours of a billing period that were never metered: what an invoice must not be issued
over unseen (`invoicing.invoice_issue` refuses them without finance's reason), and what the
invoice page shows.

An invoice bills the allocated source, so an hour counts as metered when its allocated window
is done. Metering begins at METERING_START when it is set, else at the oldest allocated window
there is (the hourly sweep fills every hour of an open billing period from then on): an hour
before metering began is not a gap, an hour after it without a done window is — a gap the
sweep has not filled yet, or one nobody metered at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db.models import Count, Min, Q
from django.utils import timezone

from ..calculations.money import HOUR, floor_hour
from ..models import MeteringWindow, UsageRecord, WindowStatus


@dataclass(frozen=True)
class UnmeteredSpan:
    """Consecutive hours [start, end) with no done allocated window."""

    start: datetime
    end: datetime

    @property
    def hours(self) -> int:
        return int((self.end - self.start) / HOUR)

    def __str__(self) -> str:
        last = self.end - HOUR
        if self.hours == 1:
            return f"{self.start:%Y-%m-%d %H}:00 UTC"
        return f"{self.start:%Y-%m-%d %H}:00 to {last:%Y-%m-%d %H}:59 UTC"


def unmetered_spans(
    *, start: datetime, end: datetime, now: datetime | None = None
) -> list[UnmeteredSpan]:
    """The closed hours of [start, end) since metering began whose allocated window is not
    done, as runs of consecutive hours, oldest first. One query when every hour is metered
    (when metering began, and how many of the hours are done); the done hours are read only
    when some are missing."""
    lowest = floor_hour(start.astimezone(UTC))
    if settings.METERING_START is not None:
        setting = settings.METERING_START.astimezone(UTC)
        lowest = max(lowest, setting if setting == floor_hour(setting) else
                     floor_hour(setting) + HOUR)
    last = min(end.astimezone(UTC), floor_hour((now or timezone.now()).astimezone(UTC)))
    done_in_range = Q(status=WindowStatus.DONE, hour__gte=lowest, hour__lt=last)
    facts = MeteringWindow.objects.filter(source=UsageRecord.Source.ALLOCATED).aggregate(
        first=Min("hour"), done=Count("pk", filter=done_in_range),
    )
    if settings.METERING_START is None and facts["first"] is None:
        return []  # nothing was ever metered: no hour is a gap
    # Metering began at METERING_START, else at the oldest allocated window (none is older,
    # so the done windows counted from `lowest` are those from `first`).
    first = lowest if settings.METERING_START is not None else max(
        lowest, facts["first"].astimezone(UTC))
    if first >= last or facts["done"] == (last - first) // HOUR:
        return []
    done = set(
        MeteringWindow.objects.filter(done_in_range, source=UsageRecord.Source.ALLOCATED)
        .values_list("hour", flat=True)
    )
    spans: list[UnmeteredSpan] = []
    hour = first
    while hour < last:
        if hour not in done:
            if spans and spans[-1].end == hour:
                spans[-1] = UnmeteredSpan(spans[-1].start, hour + HOUR)
            else:
                spans.append(UnmeteredSpan(hour, hour + HOUR))
        hour += HOUR
    return spans


def describe_spans(spans: list[UnmeteredSpan], *, at_most: int = 5) -> str:
    """The spans as a sentence's list: "2026-11-03 04:00 to 06:59 UTC, … and 3 more"."""
    shown = ", ".join(str(span) for span in spans[:at_most])
    more = len(spans) - at_most
    return f"{shown} and {more} more" if more > 0 else shown
