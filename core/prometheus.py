"""A small Prometheus HTTP API client: instant PromQL queries, failures classified.

Infrastructure that knows no domain (fleet health reads DCGM series through it; metering
will too). No ORM. Unavailable (connection refused, timeout, 5xx) is worth retrying; a
rejected query (4xx, `status: error`) is not.
"""

from dataclasses import dataclass
from typing import Any

import requests


@dataclass(frozen=True)
class Sample:
    """One series of an instant vector: its labels and its value."""

    labels: dict[str, str]
    value: float


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
        try:
            response = self.session.get(
                f"{self.base_url}/api/v1/query", params={"query": promql}, timeout=self.timeout
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
        if data.get("resultType") != "vector":
            raise PrometheusQueryError(f"expected a vector, got {data.get('resultType')}")
        samples = []
        for series in data.get("result") or []:
            try:
                value = float(series["value"][1])
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            samples.append(Sample(labels=dict(series.get("metric") or {}), value=value))
        return samples

    def close(self) -> None:
        self.session.close()
