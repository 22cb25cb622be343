"""A small Prometheus HTTP API client: instant and range PromQL queries, failures classified.

Infrastructure that knows no domain (fleet health reads DCGM series through it; metering
will too). No ORM. Unavailable (connection refused, timeout, 5xx) is worth retrying; a
rejected query (4xx, `status: error`) is not.
"""

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import requests


@dataclass(frozen=True)
class Sample:
    """One series of an instant vector: its labels and its value."""

    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class RangeSeries:
    """One series of a range query's matrix: its labels and its (unix seconds, value) points,
    in time order (a step where the series had no sample has no point)."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


class PrometheusError(Exception):
    """Prometheus could not answer a query."""


class PrometheusUnavailable(PrometheusError):
    """Down, unreachable, too slow or failing (5xx): try again later."""


class PrometheusQueryError(PrometheusError):
    """The query itself was refused: retrying will not help."""


class PrometheusClient:
    def __init__(self, *, base_url: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()

    def query(self, promql: str) -> list[Sample]:
        """Evaluate an instant query; returns one Sample per series of the vector result."""
        samples = []
        for series in self._result("query", {"query": promql}, expect="vector"):
            try:
                value = float(series["value"][1])
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            samples.append(Sample(labels=dict(series.get("metric") or {}), value=value))
        return samples

    def query_range(
        self, promql: str, *, start: datetime, end: datetime, step: float
    ) -> list[RangeSeries]:
        """Evaluate `promql` at every `step` seconds from `start` to `end` (both included);
        returns one RangeSeries per series of the matrix result. A point whose value is not a
        number Prometheus can send (NaN, ±Inf) is dropped, as a missing step."""
        params = {"query": promql, "start": f"{start.timestamp():.3f}",
                  "end": f"{end.timestamp():.3f}", "step": f"{step:g}"}
        matrix = []
        for series in self._result("query_range", params, expect="matrix"):
            points = []
            for point in series.get("values") or []:
                try:
                    at, value = float(point[0]), float(point[1])
                except (IndexError, TypeError, ValueError):
                    continue
                if math.isfinite(value):
                    points.append((at, value))
            matrix.append(RangeSeries(labels=dict(series.get("metric") or {}), points=points))
        return matrix

    def _result(self, endpoint: str, params: dict[str, str], *, expect: str) -> list[dict]:
        """The `data.result` of a query answered with `expect` ("vector", "matrix"); failures
        raised as PrometheusUnavailable (retry) or PrometheusQueryError (do not)."""
        try:
            response = self.session.get(
                f"{self.base_url}/api/v1/{endpoint}", params=params, timeout=self.timeout
            )
        except requests.RequestException as exc:
            raise PrometheusUnavailable(f"{exc.__class__.__name__}: {exc}") from exc
        if response.status_code >= 500 or response.status_code == 429:
            raise PrometheusUnavailable(f"Prometheus answered {response.status_code}")
        try:
            body: dict[str, Any] = response.json()
        except ValueError as exc:
            raise PrometheusUnavailable("Prometheus answered with something not JSON") from exc
        if response.status_code >= 400 or body.get("status") != "success":
            raise PrometheusQueryError(
                f"{body.get('errorType', response.status_code)}: {body.get('error', '')}"
            )
        data = body.get("data") or {}
        if data.get("resultType") != expect:
            raise PrometheusQueryError(f"expected a {expect}, got {data.get('resultType')}")
        return data.get("result") or []

    def close(self) -> None:
        self.session.close()
