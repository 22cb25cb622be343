"""DCGM-shaped series for the health tests: a real dcgm-exporter scrape, plus faulty GPUs.

The healthy node is the real scrape (dcgm-exporter 4.5.3, `Hostname` label). Each faulty node
reuses its label set (same label names, newer exporters' `hostname` on some) with one fault.
Samples every 30 s over the last six minutes, so `increase()` and `max_over_time()` see them.
"""

import time
from pathlib import Path

from tests.support.fixtures_prometheus import Series, parse_text_exposition

DATA = Path(__file__).resolve().parents[1] / "data" / "dcgm"
SCRAPE = DATA / "metrics-sample-k8s-rtx4000ada.prom"
HEALTHY_HOST = "lke529760-766837-0a634ab30000"
STEPS = 12

# host -> (label carrying the host name, GPU index, fault series {metric: (first, last)})
FAULTS: dict[str, tuple[str, int, dict[str, tuple[float, float]]]] = {
    "gpu-xid-001": ("hostname", 3, {"DCGM_FI_DEV_XID_ERRORS": (0, 79)}),
    "gpu-dbe-001": ("Hostname", 1, {
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": (0, 2),
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": (12, 12),
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": (2, 2),
        "DCGM_FI_DEV_RETIRED_SBE": (3, 3),
        "DCGM_FI_DEV_RETIRED_DBE": (1, 1),
    }),
    "gpu-therm-001": ("hostname", 0, {"DCGM_FI_DEV_THERMAL_VIOLATION": (0, 120e9)}),
    "gpu-power-001": ("Hostname", 2, {"DCGM_FI_DEV_POWER_VIOLATION": (0, 5e9)}),
    "gpu-nvl-001": ("hostname", 5, {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": (10, 40)}),
    "gpu-pages-001": ("Hostname", 4, {"DCGM_FI_DEV_RETIRED_PENDING": (0, 1)}),
}


def gpu_uuid(host: str, index: int) -> str:
    number = sum(ord(c) for c in host) * 100 + index
    return f"GPU-{number:08x}-0000-4000-8000-{index:012x}"


def dcgm_series(now: float | None = None) -> Series:
    now = now or time.time()
    times = [now - 30 * (STEPS - step) for step in range(STEPS)]
    series: Series = {}
    real = parse_text_exposition(SCRAPE.read_text())
    for name, labels, value in real:
        series.setdefault(name, []).append((labels, [(t, value) for t in times]))
    template = next(labels for name, labels, _ in real if name == "DCGM_FI_DEV_XID_ERRORS")
    for host, (host_label, index, faults) in FAULTS.items():
        labels = {k: v for k, v in template.items() if k not in ("Hostname", "err_code", "err_msg")}
        labels |= {
            host_label: host, "gpu": str(index), "device": f"nvidia{index}",
            "UUID": gpu_uuid(host, index), "modelName": "NVIDIA H100 80GB HBM3",
            "namespace": "tenant-acme", "pod": f"train-{host}",
        }
        for metric, (first, last) in faults.items():
            values = [first + (last - first) * step / (STEPS - 1) for step in range(STEPS)]
            if metric == "DCGM_FI_DEV_XID_ERRORS":  # a gauge: the last XID seen, from one moment
                values = [first] * (STEPS // 2) + [last] * (STEPS - STEPS // 2)
                labels = labels | {"err_code": str(int(last)), "err_msg": ""}
            series.setdefault(metric, []).append((labels, list(zip(times, values, strict=True))))
    return series
