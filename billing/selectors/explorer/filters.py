"""What the explorer is asked (UsageFilter), GPU-equivalents, and the usage it reads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from django.db.models import (
    Case,
    FloatField,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Cast

from ...calculations.money import SECONDS_PER_HOUR, round_to
from ...models import (
    UsageDaily,
    UsageRecord,
)

ALLOCATED = UsageRecord.Source.ALLOCATED
MEASURED = UsageRecord.Source.MEASURED
GPU_KINDS = ("gpu", "mig", "hami")
MIG_SLICES = 7
MIG_PROFILE = re.compile(r":(\d)g\.")
HOURS = Decimal("0.01")
GPU_CLASSES = (
    Q(resource__startswith="gpu:")
    | Q(resource__startswith="mig:")
    | Q(resource__startswith="hami:")
)


@dataclass(frozen=True)
class UsageFilter:
    """What the explorer shows: [start, end) in whole UTC days, and whose usage."""

    start: datetime
    end: datetime
    tenant_ids: list[int] | None = None  # None: every tenant (finance, admins)
    tenant_slug: str = ""
    resource: str = ""  # a GPU resource class, or a GPU model key (all its classes)
    cost_center: str = ""

    @property
    def days(self) -> list[date]:
        first, last = self.start.date(), (self.end - timedelta(seconds=1)).date()
        return [first + timedelta(days=n) for n in range((last - first).days + 1)]


# --- GPU-equivalents ---------------------------------------------------------------------------


def gpu_equivalent(resource: str) -> Fraction | None:
    """How many GPUs one unit of `resource` is (None: not counted in GPU-hours).

    Read from the key alone, as `_gpu_seconds` reads it in SQL, so that a model the vocabulary
    does not know (the measured source keeps `gpu:<its name>`) still counts as the GPU it is.
    """
    kind, _, rest = resource.partition(":")
    if kind == "gpu" and rest:
        return Fraction(1)
    if kind == "mig":
        slices = MIG_PROFILE.search(rest)
        if slices and 1 <= int(slices.group(1)) <= MIG_SLICES:
            return Fraction(int(slices.group(1)), MIG_SLICES)
    if kind == "hami" and rest.endswith(":cores"):
        return Fraction(1, 100)
    return None


def _gpu_seconds(field: str) -> Case:
    """`gpu_equivalent` in SQL: the GPU-seconds a row's `field` comes to."""
    seconds = Cast(field, FloatField())
    whens = [When(resource__startswith="gpu:", then=seconds)]
    whens += [
        When(
            Q(resource__startswith="mig:", resource__contains=f":{slices}g."),
            then=seconds * Value(slices / MIG_SLICES),
        )
        for slices in range(1, MIG_SLICES + 1)
    ]
    whens.append(
        When(Q(resource__startswith="hami:", resource__endswith=":cores"),
             then=seconds / Value(100.0))
    )
    return Case(*whens, default=Value(0.0), output_field=FloatField())


def hours(seconds: Fraction | float | int | None) -> Decimal:
    """Seconds as hours, to the hundredth (half up)."""
    return round_to(Fraction(seconds or 0) / SECONDS_PER_HOUR, HOURS)


def unit_label(resource: str) -> str:
    """What one hour of `resource` is called in the explorer's table."""
    kind, _, rest = resource.partition(":")
    if kind == "mig":
        return "instance-hours"
    if kind == "hami":
        return "GiB-hours" if rest.endswith(":memory-gib") else "%-GPU-hours"
    return "GPU-hours"


# --- filtering -----------------------------------------------------------------------------------


def _resource_q(resource: str) -> Q:
    if ":" in resource:
        return Q(resource=resource)
    return (
        Q(resource=f"gpu:{resource}")
        | Q(resource__startswith=f"mig:{resource}:")
        | Q(resource__startswith=f"hami:{resource}:")
    )


def _tenant_q(usage: UsageFilter, prefix: str = "") -> Q:
    q = Q()
    if usage.tenant_ids is not None:
        q &= Q(**{f"{prefix}tenant_id__in": usage.tenant_ids})
    if usage.tenant_slug:
        q &= Q(**{f"{prefix}tenant__slug": usage.tenant_slug})
    if usage.cost_center:
        q &= Q(**{f"{prefix}tenant__cost_center": usage.cost_center})
    return q


def tenant_filter(usage: UsageFilter, prefix: str = "") -> Q:
    """The filter's tenants as a condition on a model reaching them through `prefix`."""
    return _tenant_q(usage, prefix)


def _days(usage: UsageFilter) -> tuple[date, date]:
    """The filter's [first day, day after the last): its bounds must be whole UTC days."""
    for bound in (usage.start, usage.end):
        if bound.astimezone(UTC).time() != datetime.min.time():
            raise ValueError(f"{bound.isoformat()} is not the start of a UTC day.")
    return usage.start.astimezone(UTC).date(), usage.end.astimezone(UTC).date()


def gpu_usage_days(usage: UsageFilter, *, source: str = ALLOCATED) -> QuerySet[UsageDaily]:
    """The GPU-class usage per day the filter selects (of one source): the records' sums."""
    first, after = _days(usage)
    days = UsageDaily.objects.filter(
        GPU_CLASSES, _tenant_q(usage), source=source, day__gte=first, day__lt=after
    )
    if usage.resource:
        days = days.filter(_resource_q(usage.resource))
    return days
