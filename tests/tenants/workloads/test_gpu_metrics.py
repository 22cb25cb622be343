"""A workload's GPU use read from a real Prometheus: each workload sees its own pods' GPUs (by
its tenant's namespace and its kind's pod names), with their values; and why there is nothing
to show when there is not (no GPUs, no Prometheus, no series, Prometheus down)."""

from datetime import UTC, datetime, timedelta

import pytest

from core.errors import Unavailable
from core.prometheus import PrometheusClient
from tenants.workloads.gpu_metrics import (
    PERIODS,
    State,
    chart_data,
    gpu_pod_selector,
    workload_gpu_metrics,
)
from tenants.workloads.models import Workload
from tenants.workloads.registry import KINDS

from .gpu_series import BOX_POD, CHAT_PODS, H100, NOW, box_and_chat, gpu_series

pytestmark = pytest.mark.django_db
END = datetime.fromtimestamp(NOW, tz=UTC)


@pytest.fixture
def prometheus(prometheus_server, settings):
    settings.PROMETHEUS_URL = prometheus_server(gpu_series()).url


@pytest.fixture
def workloads(tenant, other_tenant):
    return box_and_chat(tenant, other_tenant)


@pytest.fixture
def box(workloads):
    return workloads[0]


@pytest.fixture
def chat(workloads):
    return workloads[1]


def test_each_workload_sees_only_its_own_pods_gpus(prometheus, box, chat):
    mine = workload_gpu_metrics(workload=box, period="1h", end=END)
    assert mine.state == State.OK
    assert [(g.pod, g.host, g.index) for g in mine.gpus] == [(BOX_POD, "gpu-a-001", "0")]
    (gpu,) = mine.gpus
    assert {value for _, value in gpu.points["utilization"]} == {40}
    assert {value for _, value in gpu.points["memory_mib"]} == {1000}
    assert {value for _, value in gpu.points["power_watts"]} == {100}
    assert (mine.summary.mean_utilization, mine.summary.peak_memory_mib,
            mine.summary.mean_power_watts) == (40, 1000, 100)
    # A point per step of the hour, both ends included.
    assert [at for at, _ in gpu.points["utilization"]] == mine.times
    assert len(mine.times) == 121 and mine.end == END

    theirs = workload_gpu_metrics(workload=chat, period="6h", end=END)
    # Two GPUs, the first read once though two containers report it.
    assert [(g.pod, g.index) for g in theirs.gpus] == [(CHAT_PODS[0], "3"), (CHAT_PODS[1], "5")]
    assert [{v for _, v in g.points["utilization"]} for g in theirs.gpus] == [{20}, {60}]
    # Both GPUs' mean, their memory together, their power together.
    assert (theirs.summary.mean_utilization, theirs.summary.peak_memory_mib,
            theirs.summary.mean_power_watts) == (40, 8000, 400)
    assert theirs.period.step == 120 and len(theirs.times) == 181


def test_every_period_keeps_its_points_bounded(prometheus, box):
    for key, period in PERIODS.items():
        metrics = workload_gpu_metrics(workload=box, period=key, end=END)
        assert 120 <= len(metrics.times) <= 181, key
        points = metrics.gpus[0].points["utilization"]
        assert 0 < len(points) <= len(metrics.times), key
        # The steps are on a grid of their own size (the same period reads the same points).
        assert metrics.end <= END < metrics.end + timedelta(seconds=period.step), key
        assert metrics.start == metrics.end - period.length, key


def test_the_charts_have_a_line_per_gpu_on_the_periods_steps(prometheus, chat):
    data = chart_data(workload_gpu_metrics(workload=chat, period="1h", end=END))
    assert len(data["labels"]) == 121 and data["labels"][-1] == END.strftime("%H:%M")
    lines = data["charts"]["power_watts"]["lines"]
    assert [line["label"] for line in lines] == [f"{CHAT_PODS[0]} · GPU 3",
                                                f"{CHAT_PODS[1]} · GPU 5"]
    assert set(lines[1]["data"]) == {250}


def test_a_workload_whose_pods_have_no_series_yet_says_so(prometheus, tenant):
    train = Workload.objects.create(tenant=tenant, kind="slurm", name="train",
                                    demand={H100: 4}, status="ready")
    metrics = workload_gpu_metrics(workload=train, period="1h", end=END)
    assert (metrics.state, metrics.gpus) == (State.NO_SERIES, [])
    assert "not run on their GPUs long enough" in metrics.message


def test_a_period_before_the_series_has_none(prometheus, box):
    earlier = datetime.fromtimestamp(NOW - 4 * 3600, tz=UTC)
    assert workload_gpu_metrics(workload=box, period="1h", end=earlier).state == State.NO_SERIES


def test_a_workload_without_gpus_asks_prometheus_nothing(settings, tenant, prometheus_down_url):
    settings.PROMETHEUS_URL = prometheus_down_url  # it would be Unavailable if asked
    dev = Workload.objects.create(tenant=tenant, kind="vcluster", name="dev",
                                  demand={"cpu": 2, "memory-gib": 4}, status="ready")
    assert workload_gpu_metrics(workload=dev, period="1h").state == State.NO_GPUS


def test_without_prometheus_the_workload_has_no_metrics_to_show(settings, box):
    settings.PROMETHEUS_URL = ""
    metrics = workload_gpu_metrics(workload=box, period="1h")
    assert metrics.state == State.NOT_CONFIGURED
    assert "PROMETHEUS_URL" in metrics.message


def test_prometheus_down_is_unavailable(settings, box, prometheus_down_url):
    settings.PROMETHEUS_URL = prometheus_down_url
    with pytest.raises(Unavailable, match="Prometheus did not answer"):
        workload_gpu_metrics(workload=box, period="1h")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kinds_pod_pattern_is_a_promql_regex(prometheus, settings, tenant, kind):
    """PromQL's regular expressions are RE2's, in a PromQL string: Prometheus takes each
    kind's matchers as they are sent (a refused one would be a PrometheusQueryError)."""
    workload = Workload(tenant=tenant, kind=kind, name="box", demand={H100: 1})
    client = PrometheusClient(base_url=settings.PROMETHEUS_URL, timeout=5)
    # At the series' last minute, whenever in the run this test comes.
    found = client.query(f"count(DCGM_FI_DEV_GPU_UTIL{{{gpu_pod_selector(workload)}}} @ {NOW})")
    assert [s.value for s in found] == ([1] if kind == "vm" else [])
