"""The Prometheus client's range queries, against a real Prometheus: a matrix with a point per
step, and the same failure classes as instant queries (down → PrometheusUnavailable, a query
refused → PrometheusQueryError)."""

from datetime import UTC, datetime

import pytest

from core.prometheus import PrometheusClient, PrometheusQueryError, PrometheusUnavailable

START = datetime(2026, 3, 3, 10, tzinfo=UTC)
T0 = START.timestamp()
SERIES = {
    "gpu_busy": [
        ({"pod": "a"}, [(T0 + 30 * i, float(i)) for i in range(21)]),  # 10:00 to 10:10
        ({"pod": "b"}, [(T0 + 30 * i, 7.0) for i in range(11, 21)]),  # from 10:05:30
    ],
}


@pytest.fixture
def client(prometheus_server):
    client = PrometheusClient(base_url=prometheus_server(SERIES).url, timeout=5)
    yield client
    client.close()


def test_a_range_query_answers_a_point_per_step_of_each_series(client):
    matrix = client.query_range("gpu_busy", start=START, end=START.replace(minute=10), step=60)
    by_pod = {series.labels["pod"]: series.points for series in matrix}
    assert by_pod["a"] == [(T0 + 60 * i, float(2 * i)) for i in range(11)]
    # b starts at 10:05:30: from 10:06 on (the five-minute lookback carries nothing before).
    assert by_pod["b"] == [(T0 + 60 * i, 7.0) for i in range(6, 11)]
    assert matrix[0].labels["__name__"] == "gpu_busy"


def test_a_range_query_over_an_empty_period_is_an_empty_matrix(client):
    assert client.query_range("gpu_busy", start=START.replace(hour=20),
                              end=START.replace(hour=21), step=60) == []


def test_a_refused_range_query_is_a_query_error(client):
    with pytest.raises(PrometheusQueryError):
        client.query_range("gpu_busy{", start=START, end=START.replace(minute=10), step=60)
    with pytest.raises(PrometheusQueryError):  # end before start
        client.query_range("gpu_busy", start=START.replace(minute=10), end=START, step=60)


def test_a_range_query_to_a_prometheus_that_is_down_is_unavailable(prometheus_down_url):
    client = PrometheusClient(base_url=prometheus_down_url, timeout=2)
    with pytest.raises(PrometheusUnavailable):
        client.query_range("gpu_busy", start=START, end=START.replace(minute=10), step=60)
