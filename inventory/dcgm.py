"""DCGM health signals: which PromQL finds each fault, and how bad a finding is.

Pure functions over Prometheus samples (label dict + value); no ORM, no I/O. The series are
dcgm-exporter's (`DCGM_FI_DEV_*`, labels `gpu`, `UUID`, `Hostname` or — after 4.5.3 — `hostname`).
Counters are read as `increase()` over the look-back window, so a fault that was repaired and
stopped counting does not reopen its event; gauges as `max_over_time()`.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from core.prometheus import Sample

XID_DESCRIPTIONS = {
    13: "Graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "Preemptive cleanup",
    48: "Double-bit ECC error",
    63: "ECC page retirement or row remapping event",
    64: "ECC page retirement or row remapper recording failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "High single-bit ECC error rate",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
}


@dataclass(frozen=True)
class Observation:
    """One fault seen on one GPU of one host."""

    host: str
    kind: str
    severity: str
    value: float
    detail: str
    gpu_index: int | None = None
    gpu_uuid: str = ""

    @property
    def subject(self) -> str:
        return "node" if self.gpu_index is None else f"gpu:{self.gpu_index}"


@dataclass(frozen=True)
class Policy:
    """What counts as how severe (the remediation policy acts on the severity)."""

    critical_xids: frozenset[int]
    window_minutes: int


Classifier = Callable[[Sample, Policy], tuple[str, str]]  # -> (severity, detail)


@dataclass(frozen=True)
class Signal:
    kind: str
    query: str  # `{w}` is the look-back window, e.g. 10m
    classify: Classifier


def _xid(sample: Sample, policy: Policy) -> tuple[str, str]:
    code = int(sample.value)
    message = sample.labels.get("err_msg") or XID_DESCRIPTIONS.get(code, "")
    severity = "critical" if code in policy.critical_xids else "warning"
    return severity, f"XID {code}" + (f": {message}" if message and message != "No Error" else "")


def _fixed(severity: str, text: str) -> Classifier:
    def classify(sample: Sample, policy: Policy) -> tuple[str, str]:
        return severity, text.format(value=sample.value)

    return classify


def _throttle(warning_share: float, what: str) -> Classifier:
    """Throttling counters count nanoseconds: severity by the share of the window throttled."""

    def classify(sample: Sample, policy: Policy) -> tuple[str, str]:
        seconds = sample.value / 1e9
        share = seconds / (policy.window_minutes * 60)
        severity = "warning" if share >= warning_share else "info"
        return severity, f"{what} for {seconds:.1f} s in the last {policy.window_minutes} min"

    return classify


SIGNALS: tuple[Signal, ...] = (
    Signal("xid", "max_over_time(DCGM_FI_DEV_XID_ERRORS[{w}]) > 0", _xid),
    Signal(
        "ecc-dbe",
        "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[{w}]) > 0"
        " or increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[{w}]) > 0",
        _fixed("critical", "{value:.0f} uncorrectable (double-bit) ECC errors"),
    ),
    Signal(
        "retired-pages",
        "increase(DCGM_FI_DEV_RETIRED_DBE[{w}]) > 0"
        " or max_over_time(DCGM_FI_DEV_RETIRED_PENDING[{w}]) > 0",
        _fixed("warning", "{value:.0f} memory pages retired or pending retirement"),
    ),
    Signal(
        "row-remap-failure",
        "max_over_time(DCGM_FI_DEV_ROW_REMAP_FAILURE[{w}]) > 0",
        _fixed("critical", "Row remapping failed: the GPU memory cannot repair itself"),
    ),
    Signal(
        "thermal-violation",
        "increase(DCGM_FI_DEV_THERMAL_VIOLATION[{w}]) > 0",
        _throttle(0.10, "Thermally throttled"),
    ),
    Signal(
        "power-violation",
        "increase(DCGM_FI_DEV_POWER_VIOLATION[{w}]) > 0",
        _throttle(0.50, "Power throttled"),
    ),
    Signal(
        "nvlink-errors",
        "increase(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL[{w}]) > 0"
        " or increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[{w}]) > 0"
        " or increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL[{w}]) > 0"
        " or increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[{w}]) > 0",
        _fixed("warning", "{value:.0f} NVLink errors"),
    ),
)

# Latest values written onto each GPU (its ECC counters and retired pages).
COUNTERS: dict[str, str] = {
    "ecc_sbe_count": "last_over_time(DCGM_FI_DEV_ECC_SBE_AGG_TOTAL[{w}])",
    "ecc_dbe_count": "last_over_time(DCGM_FI_DEV_ECC_DBE_AGG_TOTAL[{w}])",
    "retired_pages": "last_over_time(DCGM_FI_DEV_RETIRED_SBE[{w}])"
    " + on(UUID) last_over_time(DCGM_FI_DEV_RETIRED_DBE[{w}])",
}


def window(policy: Policy) -> str:
    return f"{policy.window_minutes}m"


def host_of(labels: dict[str, str]) -> str:
    """dcgm-exporter renamed `Hostname` to `hostname` after 4.5.3-4.8.2: accept both."""
    return labels.get("Hostname") or labels.get("hostname") or ""


def gpu_index_of(labels: dict[str, str]) -> int | None:
    try:
        return int(labels["gpu"])
    except (KeyError, ValueError):
        return None


def observations(
    signal: Signal, samples: Iterable[Sample], policy: Policy
) -> list[Observation]:
    found = []
    for sample in samples:
        host = host_of(sample.labels)
        if not host:
            continue
        severity, detail = signal.classify(sample, policy)
        found.append(
            Observation(
                host=host,
                kind=signal.kind,
                severity=severity,
                value=sample.value,
                detail=detail[:300],
                gpu_index=gpu_index_of(sample.labels),
                gpu_uuid=sample.labels.get("UUID", ""),
            )
        )
    return found
