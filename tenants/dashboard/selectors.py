"""Reads of the tenant's dashboard that compose several sub-domains."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import IntegerField, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from ..access.models import Tenant
from ..quota.selectors import QuotaLine
from ..workloads.models import Workload, WorkloadStatus


@dataclass(frozen=True)
class GpuAdmission:
    """A tenant's GPUs (and MIG instances) as Kueue sees them: waiting in its queue, admitted
    (what Kueue last reported in use, borrowed included) and, of those, borrowed from the
    cohort."""

    queued: int
    admitted: int
    borrowed: int

    def __bool__(self) -> bool:
        return bool(self.queued or self.admitted or self.borrowed)


def tenant_gpu_admission(*, tenant: Tenant, quota_lines: Iterable[QuotaLine]) -> GpuAdmission:
    """Queued from the tenant's live workloads' last observations (one query); admitted and
    borrowed from its quota lines, as Kueue last reported them (no query)."""
    lendable = [line for line in quota_lines if line.lendable]
    queued = (
        Workload.objects.filter(tenant=tenant)
        .exclude(status__in=(WorkloadStatus.DELETING, WorkloadStatus.DELETED))
        .aggregate(gpus=Coalesce(Sum(Cast(KT("observed__details__queue__gpus"),
                                          IntegerField())), 0))["gpus"]
    )
    return GpuAdmission(
        queued=queued,
        admitted=sum(line.used if line.cluster_used is None else line.cluster_used
                     for line in lendable),
        borrowed=sum(line.borrowed for line in lendable),
    )
