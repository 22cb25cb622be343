"""Each workload's GPUs as DCGM saw them over a window, read from Prometheus by pod.

dcgm-exporter labels each GPU's series with the pod using it (`namespace`, `pod`); a kind names
the pods that hold its GPUs (`gpu_pods`, a regular expression over pod names in the tenant's
namespace). Three instant queries per window (evaluated at its end, `@`: Prometheus 2.33 or
later, as metering needs) read every GPU pod of the fleet at once:

- peak: the highest utilization any of a pod's GPUs reported in the window;
- mean: its GPUs' mean utilization over the window;
- gpus: how many GPUs (or MIG instances) reported for it (a GPU counts once, whatever the
  number of containers on it).

A pod whose every sample stayed below a threshold is idle. No ORM, no clock: the caller says
which window, and matches the pods to its workloads (`activity_of`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from core.prometheus import PrometheusClient

UTILIZATION = "DCGM_FI_DEV_GPU_UTIL"
SERIES = f'{UTILIZATION}{{pod!=""}}'
# One GPU (or MIG instance): several containers on it are one.
GPU_IDENTITY = "namespace, pod, Hostname, hostname, UUID, GPU_I_ID"


@dataclass(frozen=True)
class PodActivity:
    pod: str
    gpus: int
    mean: Decimal  # percent
    peak: Decimal  # percent

    def idle(self, threshold: int) -> bool:
        return self.peak < threshold


@dataclass(frozen=True)
class Activity:
    """A workload's GPU pods over one window; no pods: DCGM saw none of its GPUs."""

    pods: tuple[PodActivity, ...] = ()

    @property
    def measured(self) -> bool:
        return bool(self.pods)

    @property
    def gpus(self) -> int:
        return sum(pod.gpus for pod in self.pods)

    @property
    def mean(self) -> Decimal | None:
        """The mean over its GPUs (each pod weighted by its GPUs)."""
        if not self.gpus:
            return None
        total = sum(pod.mean * pod.gpus for pod in self.pods)
        return _percent(total / self.gpus)

    def idle_pods(self, threshold: int) -> tuple[PodActivity, ...]:
        return tuple(pod for pod in self.pods if pod.idle(threshold))

    def idle(self, threshold: int) -> bool:
        """Every one of its GPUs stayed below `threshold` the whole window."""
        return self.measured and len(self.idle_pods(threshold)) == len(self.pods)


def _percent(value: Decimal | float) -> Decimal:
    clamped = min(max(Decimal(str(value)), Decimal(0)), Decimal(100))
    return clamped.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def queries(window_seconds: int, at: datetime) -> dict[str, str]:
    window = f"[{int(window_seconds)}s] @ {at.timestamp():.3f}"
    return {
        "peak": f"max by (namespace, pod) (max_over_time({SERIES}{window}))",
        "mean": f"avg by (namespace, pod) (avg_over_time({SERIES}{window}))",
        "gpus": f"count by (namespace, pod) (max by ({GPU_IDENTITY}) "
                f"(last_over_time({SERIES}{window})))",
    }


def read_pods(client: PrometheusClient, *, window_seconds: int,
              at: datetime) -> dict[str, list[PodActivity]]:
    """Every GPU pod DCGM reported within the window ending `at`, by namespace. Raises
    PrometheusError (core.prometheus) when Prometheus cannot answer."""
    answers = {
        name: {
            (s.labels.get("namespace", ""), s.labels.get("pod", "")): s.value
            for s in client.query(promql)
        }
        for name, promql in queries(window_seconds, at).items()
    }
    by_namespace: dict[str, list[PodActivity]] = {}
    for key, peak in sorted(answers["peak"].items()):
        if key[0] and key[1]:
            by_namespace.setdefault(key[0], []).append(PodActivity(
                pod=key[1], gpus=int(answers["gpus"].get(key, 1)),
                mean=_percent(answers["mean"].get(key, peak)), peak=_percent(peak),
            ))
    return by_namespace


def activity_of(pods: Mapping[str, list[PodActivity]], *, namespace: str,
                pattern: str) -> Activity:
    """The pods of `namespace` whose names match `pattern` (a kind's `gpu_pods`)."""
    matcher = re.compile(pattern)
    return Activity(tuple(pod for pod in pods.get(namespace, ()) if matcher.fullmatch(pod.pod)))
