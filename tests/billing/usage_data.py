"""Usage records made by hand for the usage explorer's tests, with the GPU-hours they come to."""

import itertools
from datetime import timedelta

from billing.models import MeteringWindow, UsageRecord
from tests.billing.timeline import utc

H100 = "gpu:nvidia-h100-80gb"
H200 = "gpu:nvidia-h200"
MIG_3G = "mig:nvidia-a100-80gb:3g.40gb"
HAMI_CORES = "hami:nvidia-l40s:cores"
HAMI_MEMORY = "hami:nvidia-l40s:memory-gib"
NOVEMBER = {"start": "2026-11-01", "end": "2026-11-30"}
_hosts = itertools.count(1)


def allocated(tenant, resource, hour, seconds):
    return UsageRecord.objects.create(
        tenant=tenant, source="allocated", resource=resource, hour=hour, unit_seconds=seconds
    )


def measured_done(hour) -> None:
    """The measured window of `hour` is metered: what DCGM saw then is known (maybe nothing)."""
    MeteringWindow.objects.get_or_create(source="measured", hour=hour,
                                         defaults={"status": "done"})


def measured(tenant, resource, hour, seconds, busy, host=""):
    measured_done(hour)
    return UsageRecord.objects.create(
        tenant=tenant, source="measured", resource=resource, hour=hour, unit_seconds=seconds,
        busy_seconds=busy, hostname=host or f"gpu-node-{next(_hosts)}",
    )


def november_usage(acme, globex) -> None:
    """Acme: 2 H100s for two hours on the 3rd and one on the 4th (5 GPU-hours), a MIG 3g
    instance for an hour (3/7 GPU-hour), a 50 % HAMi share with 24 GiB for an hour (0.5
    GPU-hour; the GiB are not GPU-hours). Globex: 4 H200s for an hour on the 3rd. Outside
    November (not counted): an H100 hour on 31 October and on 1 December."""
    allocated(acme, H100, utc(2026, 11, 3, 10), 7200)
    allocated(acme, H100, utc(2026, 11, 3, 11), 7200)
    allocated(acme, H100, utc(2026, 11, 4, 9), 3600)
    allocated(acme, MIG_3G, utc(2026, 11, 3, 10), 3600)
    allocated(acme, HAMI_CORES, utc(2026, 11, 3, 12), 50 * 3600)
    allocated(acme, HAMI_MEMORY, utc(2026, 11, 3, 12), 24 * 3600)
    allocated(acme, "cpu", utc(2026, 11, 3, 10), 64 * 3600)  # not a GPU class: never shown
    allocated(globex, H200, utc(2026, 11, 3, 10), 14400)
    allocated(acme, H100, utc(2026, 10, 31, 23), 3600)
    allocated(acme, H100, utc(2026, 12, 1, 0), 3600)


FIFTH = utc(2026, 11, 5)


def grow(tenants, *, hours: int, start=FIFTH) -> None:
    """More of the same: `hours` hours of H100 and MIG usage, allocated and measured, for each
    tenant (for query counts)."""
    for tenant in tenants:
        for n in range(hours):
            hour = start + timedelta(hours=n)
            allocated(tenant, H100, hour, 3600)
            allocated(tenant, MIG_3G, hour, 3600)
            measured(tenant, H100, hour, 3600, 1800, host="node-a")
