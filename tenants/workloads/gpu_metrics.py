"""What one workload's GPUs did over a period: utilization, framebuffer memory and power, per
GPU, read from dcgm-exporter's series in Prometheus (a read: no ORM, no writes).

dcgm-exporter labels each GPU's series with the pod using it (`namespace`, `pod`), so a
workload's GPUs are the series of its tenant's namespace whose pod its kind names
(`gpu_pods`: a regular expression the pod names fully match; PromQL's `=~` is anchored and RE2,
and the kinds' patterns use nothing RE2 lacks). One range query per metric, each GPU once
(several containers on one GPU carry the same value: `max by` the GPU's labels), each step
the mean (the maximum, for memory) of the samples within it, so that a long period's few
points still show what happened between them. A period has a step of its own that keeps its
points near 120-180.

The summary speaks of the workload as a whole: its GPUs' mean utilization over the period,
the most framebuffer memory they held at once, and the power they drew on average.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings

from core.errors import Unavailable
from core.prometheus import PrometheusClient, PrometheusError, PrometheusQueryError, RangeSeries

from .models import Workload
from .registry import KINDS
from .selectors import build_context

logger = logging.getLogger(__name__)

GPU_CLASS_KINDS = ("gpu:", "mig:", "hami:")
# One GPU (or MIG instance) of one pod, whatever container reads it.
GPU_LABELS = ("pod", "Hostname", "hostname", "gpu", "UUID", "modelName", "GPU_I_PROFILE",
              "GPU_I_ID")
# The charts draw at most this many GPUs (the summary counts every one).
CHART_GPUS = 16


@dataclass(frozen=True)
class Period:
    key: str
    label: str
    length: timedelta
    step: int  # seconds

    @property
    def window(self) -> int:
        """Seconds each point looks back over: its step, and never less than two scrapes."""
        return max(self.step, 60)


PERIODS: dict[str, Period] = {
    period.key: period
    for period in (
        Period("1h", "Last hour", timedelta(hours=1), 30),  # 121 points
        Period("6h", "Last 6 hours", timedelta(hours=6), 120),  # 181
        Period("24h", "Last 24 hours", timedelta(hours=24), 480),  # 181
        Period("7d", "Last 7 days", timedelta(days=7), 3600),  # 169
    )
}
DEFAULT_PERIOD = "1h"


@dataclass(frozen=True)
class Metric:
    key: str
    series: str  # dcgm-exporter's
    label: str
    unit: str
    over_time: str  # how a step sums up the samples within it


METRICS = (
    Metric("utilization", "DCGM_FI_DEV_GPU_UTIL", "Utilization", "%", "avg_over_time"),
    Metric("memory_mib", "DCGM_FI_DEV_FB_USED", "Memory used", "MiB", "max_over_time"),
    Metric("power_watts", "DCGM_FI_DEV_POWER_USAGE", "Power", "W", "avg_over_time"),
)


class State:
    """What there is to show, and otherwise why not."""

    OK = "ok"
    NOT_CONFIGURED = "not_configured"  # no PROMETHEUS_URL: the demo
    NO_GPUS = "no_gpus"  # the workload holds no GPUs
    NO_SERIES = "no_series"  # none of its pods has had a GPU within the period


MESSAGES = {
    State.NOT_CONFIGURED: "GPU metrics need Prometheus: PROMETHEUS_URL is not set.",
    State.NO_GPUS: "This workload holds no GPUs.",
    State.NO_SERIES: "No GPU series for this period: its pods have not run on their GPUs "
                     "long enough yet (or not within the period).",
}
UNAVAILABLE = "Prometheus did not answer: try again."


@dataclass(frozen=True)
class Gpu:
    """One GPU (or MIG instance) one of the workload's pods had, and its points per metric:
    {metric key: [(unix seconds, value), ...]}."""

    pod: str
    host: str
    index: str
    uuid: str
    model: str
    mig_profile: str
    points: dict[str, list[tuple[float, float]]]

    @property
    def label(self) -> str:
        gpu = f"GPU {self.index}" + (f" ({self.mig_profile})" if self.mig_profile else "")
        return f"{self.pod} · {gpu}"


@dataclass(frozen=True)
class Summary:
    mean_utilization: float | None  # percent, over every GPU-step
    peak_memory_mib: float | None  # the most held at once, summed over the GPUs
    mean_power_watts: float | None  # drawn by all its GPUs together, on average


@dataclass(frozen=True)
class GpuMetrics:
    state: str
    period: Period
    start: datetime
    end: datetime
    gpus: list[Gpu] = field(default_factory=list)
    summary: Summary = Summary(None, None, None)

    @property
    def message(self) -> str:
        return MESSAGES.get(self.state, "")

    @property
    def times(self) -> list[float]:
        """Every step of the period (a chart's x axis), in unix seconds."""
        first, last = self.start.timestamp(), self.end.timestamp()
        return [first + i * self.period.step
                for i in range(int((last - first) // self.period.step) + 1)]


def holds_gpus(demand: Mapping[str, int]) -> bool:
    """Whether a workload's demand has whole GPUs, MIG instances or HAMi shares."""
    return any(key.startswith(GPU_CLASS_KINDS) and amount for key, amount in demand.items())


def gpu_pod_selector(workload: Workload) -> str:
    """The label matchers of the workload's GPU series: its namespace, and the pods its kind
    names (escaped for a PromQL string)."""
    ctx = build_context(workload=workload)
    pattern = KINDS[workload.kind].module.gpu_pods(workload.spec, ctx)
    return f'namespace="{_promql_string(ctx.namespace)}", pod=~"{_promql_string(pattern)}"'


def _promql_string(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def gpu_metrics_query(metric: Metric, *, selector: str, period: Period) -> str:
    by = ", ".join(GPU_LABELS)
    return (f"max by ({by}) ({metric.over_time}({metric.series}{{{selector}}}"
            f"[{period.window}s]))")


def prometheus_client() -> PrometheusClient | None:
    """A client of the configured Prometheus, or None without PROMETHEUS_URL (the demo)."""
    if not settings.PROMETHEUS_URL:
        return None
    return PrometheusClient(base_url=settings.PROMETHEUS_URL,
                            timeout=settings.PROMETHEUS_TIMEOUT)


def workload_gpu_metrics(
    *, workload: Workload, period: str, end: datetime | None = None,
    client: PrometheusClient | None = None,
) -> GpuMetrics:
    """The workload's GPUs over the `period` (a key of PERIODS) ending at `end` (now), or the
    state saying why there is nothing to show. Prometheus down, or refusing the query, raises
    Unavailable (the API's 503; the page says so)."""
    chosen = PERIODS[period]
    # Steps on a grid of their own size: the same period asked twice reads the same points.
    last = int((end or datetime.now(tz=UTC)).timestamp()) // chosen.step * chosen.step
    stop = datetime.fromtimestamp(last, tz=UTC)
    empty = {"period": chosen, "start": stop - chosen.length, "end": stop}
    if not holds_gpus(workload.demand or {}):
        return GpuMetrics(state=State.NO_GPUS, **empty)
    own_client = client is None
    client = client or prometheus_client()
    if client is None:
        return GpuMetrics(state=State.NOT_CONFIGURED, **empty)
    selector = gpu_pod_selector(workload)
    try:
        matrices = {
            metric.key: client.query_range(
                gpu_metrics_query(metric, selector=selector, period=chosen),
                start=empty["start"], end=stop, step=chosen.step,
            )
            for metric in METRICS
        }
    except PrometheusError as exc:
        if isinstance(exc, PrometheusQueryError):  # a query of ours refused: worth a look
            logger.warning("Prometheus refused the GPU metrics of workload %s: %s",
                           workload.pk, exc)
        raise Unavailable(UNAVAILABLE) from exc
    finally:
        if own_client:
            client.close()
    gpus = _gpus(matrices)
    if not gpus:
        return GpuMetrics(state=State.NO_SERIES, **empty)
    return GpuMetrics(state=State.OK, gpus=gpus, summary=_summary(gpus), **empty)


def _gpus(matrices: Mapping[str, Iterable[RangeSeries]]) -> list[Gpu]:
    points: dict[tuple[str, ...], dict[str, list[tuple[float, float]]]] = defaultdict(dict)
    for key, matrix in matrices.items():
        for series in matrix:
            if series.points:
                identity = tuple(series.labels.get(label, "") for label in GPU_LABELS)
                points[identity][key] = series.points
    gpus = []
    for identity, by_metric in points.items():
        labels = dict(zip(GPU_LABELS, identity, strict=True))
        gpus.append(Gpu(
            pod=labels["pod"], host=labels["Hostname"] or labels["hostname"],
            index=labels["gpu"], uuid=labels["UUID"], model=labels["modelName"],
            mig_profile=labels["GPU_I_PROFILE"],
            points={metric.key: by_metric.get(metric.key, []) for metric in METRICS},
        ))
    return sorted(gpus, key=lambda g: (g.pod, g.host, _number(g.index), g.uuid, g.mig_profile))


def _number(index: str) -> int:
    return int(index) if index.isdigit() else -1


def _summary(gpus: list[Gpu]) -> Summary:
    utilization = [value for gpu in gpus for _, value in gpu.points["utilization"]]
    return Summary(
        mean_utilization=sum(utilization) / len(utilization) if utilization else None,
        peak_memory_mib=max(_totals(gpus, "memory_mib"), default=None),
        mean_power_watts=_mean(_totals(gpus, "power_watts")),
    )


def _totals(gpus: list[Gpu], key: str) -> list[float]:
    """The metric summed over the GPUs, at each step any of them has a point."""
    totals: dict[float, float] = defaultdict(float)
    for gpu in gpus:
        for at, value in gpu.points[key]:
            totals[at] += value
    return list(totals.values())


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def chart_data(metrics: GpuMetrics) -> dict:
    """The page's three charts: the steps' labels (UTC) and, per metric, one line per GPU (its
    values on the steps, None where it had none), the first CHART_GPUS GPUs only."""
    times = metrics.times
    fmt = "%m-%d %H:%M" if metrics.period.length > timedelta(days=1) else "%H:%M"
    labels = [datetime.fromtimestamp(at, tz=UTC).strftime(fmt) for at in times]
    charts = {}
    for metric in METRICS:
        lines = []
        for gpu in metrics.gpus[:CHART_GPUS]:
            values = dict(gpu.points[metric.key])
            lines.append({"label": gpu.label, "data": [values.get(at) for at in times]})
        charts[metric.key] = {"label": f"{metric.label} ({metric.unit})", "lines": lines}
    return {"labels": labels, "charts": charts}
