"""The measured source: GPU-seconds in use per tenant, host and GPU class, from the DCGM
exporter's series in Prometheus; and OpenCost's `container_gpu_allocation` beside it.

dcgm-exporter labels each GPU's series with the pod using it (`namespace`, `pod`, `container`),
its host (`Hostname`, or `hostname` from 4.5.3-4.8.2 on), its NVML name (`modelName`) and, for
a MIG instance, its profile (`GPU_I_PROFILE`). The tenant is the owner of the namespace
(`Tenant.namespace`); the class is the portal's own: `gpu:<model>` or `mig:<model>:<profile>`
(a HAMi share shows as its whole GPU: DCGM cannot tell the shares apart). A model the portal
does not know keeps a class of its own (`gpu:<its name>`), so it shows up as unpriced rather
than vanishing.

Each hour is read by subqueries evaluated at the hour's end (`@`), one step per sample period:
`[3599s:30s]` counts the 120 steps of (start, end] exactly (Prometheus 2.42 closes ranges at
both ends, so `[3600s:30s]` would take 121). At each step a GPU counts once per namespace if a
sample lies within the last step (`last_over_time(…[29999ms])`, not the 5-minute lookback,
which would go on counting a GPU for minutes after its pod went away). So:

- unit_seconds = steps present x step;
- busy_seconds = Σ utilization/100 x step (the utilization-weighted seconds).

The `@` modifier needs Prometheus 2.33 or later. No ORM and no clock here: the caller says
which hour, and which namespaces are tenants'.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from django.utils.text import slugify

from core.prometheus import PrometheusClient, Sample
from inventory import resource_classes
from inventory.dcgm import host_of

from ..calculations.money import HOUR, SECONDS_PER_HOUR

UTILIZATION = "DCGM_FI_DEV_GPU_UTIL"
OPENCOST_ALLOCATION = "container_gpu_allocation"
# One GPU (or MIG instance) in one namespace: several containers on it count it once.
GPU_LABELS = ("namespace", "Hostname", "hostname", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID")
PERCENT_CAP = Decimal("9999999.99")  # what CrossCheck.difference_percent holds


@dataclass(frozen=True)
class MeasuredUsage:
    """GPU-seconds one tenant's pods had on one host's GPUs of one class within the hour."""

    tenant_id: int
    hostname: str
    resource: str
    unit_seconds: int
    busy_seconds: int


@dataclass(frozen=True)
class Measurement:
    """What Prometheus said about one hour.

    `unattributed_seconds`: GPU-seconds in namespaces no tenant owns (system pods), reported,
    not billed. `opencost`: OpenCost's GPU-seconds per tenant, or None when Prometheus holds no
    `container_gpu_allocation` series for the hour (OpenCost does not run: no cross-check).
    """

    usage: list[MeasuredUsage]
    unattributed_seconds: int
    opencost: dict[int, int] | None


@dataclass(frozen=True)
class CrossCheckResult:
    tenant_id: int
    portal_gpu_seconds: int
    opencost_gpu_seconds: int
    difference_percent: Decimal
    flagged: bool


def _over_hour(function: str, inner: str, *, hour: datetime, step: int) -> str:
    end = int((hour + HOUR).timestamp())
    return f"{function}(({inner})[{SECONDS_PER_HOUR - 1}s:{step}s] @ {end})"


def _latest(metric: str, *, step: int) -> str:
    # Within the last step only (1 ms short of it: ranges are closed at both ends).
    return f'last_over_time({metric}{{namespace!=""}}[{step * 1000 - 1}ms])'


def gpu_queries(*, hour: datetime, step: int) -> tuple[str, str]:
    """PromQL for (steps each GPU was present, Σ its utilization over those steps)."""
    per_gpu = f"max by ({', '.join(GPU_LABELS)}) ({_latest(UTILIZATION, step=step)})"
    return (
        _over_hour("count_over_time", per_gpu, hour=hour, step=step),
        _over_hour("sum_over_time", per_gpu, hour=hour, step=step),
    )


def opencost_query(*, hour: datetime, step: int) -> str:
    """PromQL for Σ GPUs allocated x steps per namespace (each container once)."""
    per_container = (
        f"max by (namespace, pod, container) ({_latest(OPENCOST_ALLOCATION, step=step)})"
    )
    over_hour = _over_hour("sum_over_time", per_container, hour=hour, step=step)
    return f"sum by (namespace) ({over_hour})"


def gpu_resource_class(labels: Mapping[str, str]) -> str:
    """The portal's class of the GPU a DCGM series describes."""
    name = (labels.get("modelName") or "").strip()
    model = resource_classes.model_for_hami_type(name) if name else None
    model_key = model.key if model else (slugify(name) or "unknown")
    profile = (labels.get("GPU_I_PROFILE") or "").strip()
    if profile:
        return resource_classes.mig_model_key(model_key, profile)
    return resource_classes.gpu_class(model_key)


def _key(labels: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(name, "") for name in GPU_LABELS)


def _whole(value: float) -> int:
    return max(0, math.floor(value + 0.5))


def measure_hour(
    *, client: PrometheusClient, hour: datetime, step: int, namespaces: Mapping[str, int]
) -> Measurement:
    """Read one hour (raises PrometheusError when Prometheus cannot answer)."""
    present_query, busy_query = gpu_queries(hour=hour, step=step)
    present: list[Sample] = client.query(present_query)
    busy = {_key(sample.labels): sample.value for sample in client.query(busy_query)}
    opencost_samples = client.query(opencost_query(hour=hour, step=step))

    seconds: dict[tuple[int, str, str], int] = defaultdict(int)
    weighted: dict[tuple[int, str, str], float] = defaultdict(float)
    unattributed = 0
    for sample in present:
        unit_seconds = _whole(sample.value) * step
        tenant_id = namespaces.get(sample.labels.get("namespace", ""))
        if tenant_id is None:
            unattributed += unit_seconds
            continue
        row = (tenant_id, host_of(sample.labels), gpu_resource_class(sample.labels))
        seconds[row] += unit_seconds
        weighted[row] += busy.get(_key(sample.labels), 0.0) * step / 100
    usage = [
        MeasuredUsage(tenant_id, host, resource, unit, min(unit, _whole(weighted[row])))
        for row, unit in sorted(seconds.items())
        for tenant_id, host, resource in [row]
        if unit > 0
    ]
    opencost = None
    if opencost_samples:
        opencost = defaultdict(int)
        for sample in opencost_samples:
            tenant_id = namespaces.get(sample.labels.get("namespace", ""))
            if tenant_id is not None:
                opencost[tenant_id] += _whole(sample.value * step)
        opencost = dict(opencost)
    return Measurement(usage=usage, unattributed_seconds=unattributed, opencost=opencost)


def difference_percent(*, portal: int, opencost: int) -> Decimal:
    """How far OpenCost's GPU-seconds are from the portal's, as a percentage of the portal's
    (OpenCost seeing GPUs the portal did not allocate at all is 100 %)."""
    if portal == 0:
        return Decimal("0.00") if opencost == 0 else Decimal("100.00")
    value = (Decimal(opencost - portal) * 100 / Decimal(portal)).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_UP
    )
    return max(-PERCENT_CAP, min(PERCENT_CAP, value))


def cross_checks(
    *, allocated: Mapping[int, int], opencost: Mapping[int, int], threshold: Decimal
) -> list[CrossCheckResult]:
    """Per tenant with GPU-seconds on either side: the two counts, their difference, and
    whether it exceeds `threshold` percent (either way)."""
    results = []
    for tenant_id in sorted(set(allocated) | set(opencost)):
        portal, theirs = allocated.get(tenant_id, 0), opencost.get(tenant_id, 0)
        if portal == 0 and theirs == 0:
            continue
        difference = difference_percent(portal=portal, opencost=theirs)
        results.append(
            CrossCheckResult(tenant_id, portal, theirs, difference, abs(difference) > threshold)
        )
    return results
