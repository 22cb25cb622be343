"""The usage explorer's reads: GPU-hours by tenant, class and day; allocated against measured
utilization; idle GPU-hours; the health of metering. Everything is summed in SQL.

GPU-hours by tenant, class and day are summed from `UsageDaily` (the records summed per day,
kept equal to them by database triggers): a range of whole days needs nothing finer, and a
month is then thousands of rows rather than millions. Utilization needs each tenant-hour (idle
time is clamped per hour) and still reads the records, of measured hours only. The page's
summary is cached under a stamp of its range that database triggers move on every write (see
`usage_explorer`), so it is summed once per metering run rather than per view.

GPU-hours count GPU-equivalents, so that whole GPUs, MIG instances and HAMi shares add up: a
whole GPU is 1, a MIG instance `<n>g.<mem>` is n/7 of its GPU (every MIG-capable model has
seven compute slices), a HAMi compute share counts its percent of a GPU (`hami:<m>:cores`
holds percent-seconds). A HAMi memory share (`hami:<m>:memory-gib`) is the same share's other
axis: shown in its own unit, never added to GPU-hours (it would count the share twice).

Idle GPU-hours are allocated minus measured busy GPU-seconds, clamped at zero per tenant-hour
(as `billing.calculations.idle_gpu_seconds` clamps per key): an hour measured above its
allocation never hides idle time in another. Only hours whose measured window is done count
towards utilization: an hour that is a gap (Prometheus was down), pending, or not metered at all
(measured metering off) is left out, because unknown is not idle. DCGM sees a HAMi share as its
whole GPU, so a tenant's busy seconds on a shared GPU may exceed its share: the clamp keeps its
idle time at zero there rather than below.
"""

from .filters import (
    ALLOCATED,
    GPU_CLASSES,
    GPU_KINDS,
    HOURS,
    MEASURED,
    MIG_PROFILE,
    MIG_SLICES,
    UsageFilter,
    gpu_equivalent,
    gpu_usage_days,
    hours,
    unit_label,
)
from .health import (
    MeteringHealth,
    metering_health,
)
from .page import (
    EXPLORER_CACHE_SECONDS,
    EXPLORER_PAGE_SIZE,
    UTILIZATION_FIGURES,
    Explorer,
    ExplorerSummary,
    cost_center_choices,
    explorer_summary,
    usage_explorer,
    usage_stamp,
)
from .usage import (
    CHART_SQL,
    CODE_POINTS,
    DailyChart,
    UsageRow,
    gpu_hours_chart,
    gpu_usage_by_day,
    gpu_usage_by_tenant_and_class,
    usage_rows,
)
from .utilization import (
    HEADLINE_CACHE_SECONDS,
    PER_TENANT_DAY_SQL,
    PER_TENANT_SQL,
    UTC_DAY,
    FleetHeadline,
    Utilization,
    fleet_utilization_headline,
    utilization_by_tenant,
    utilization_total,
)

__all__ = [
    "ALLOCATED",
    "CHART_SQL",
    "CODE_POINTS",
    "EXPLORER_CACHE_SECONDS",
    "EXPLORER_PAGE_SIZE",
    "GPU_CLASSES",
    "GPU_KINDS",
    "HEADLINE_CACHE_SECONDS",
    "HOURS",
    "MEASURED",
    "MIG_PROFILE",
    "MIG_SLICES",
    "PER_TENANT_DAY_SQL",
    "PER_TENANT_SQL",
    "UTC_DAY",
    "UTILIZATION_FIGURES",
    "DailyChart",
    "Explorer",
    "ExplorerSummary",
    "FleetHeadline",
    "MeteringHealth",
    "UsageFilter",
    "UsageRow",
    "Utilization",
    "cost_center_choices",
    "explorer_summary",
    "fleet_utilization_headline",
    "gpu_equivalent",
    "gpu_hours_chart",
    "gpu_usage_by_day",
    "gpu_usage_by_tenant_and_class",
    "gpu_usage_days",
    "hours",
    "metering_health",
    "unit_label",
    "usage_explorer",
    "usage_rows",
    "usage_stamp",
    "utilization_by_tenant",
    "utilization_total",
]
