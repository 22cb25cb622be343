"""Measured metering from a real Prometheus: DCGM-shaped series (the real dcgm-exporter scrape's
labels) for two tenants' GPUs, a MIG instance and a system pod, with OpenCost's
`container_gpu_allocation` beside them disagreeing for one tenant; Prometheus down during a
window, recorded as a gap and filled by a later sweep."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from billing.models import CrossCheck, MeteringWindow, UsageRecord
from billing.services import metering
from billing.services.metering_measured import (
    cross_checks,
    difference_percent,
    gpu_queries,
    gpu_resource_class,
)
from core.models import AuditEvent
from tenants.workloads.models import Workload, WorkloadEvent
from tests.inventory.dcgm_series import SCRAPE
from tests.support.fixtures_prometheus import Series, parse_text_exposition

from .timeline import utc

HOUR = utc(2026, 3, 3, 10)
NEXT = utc(2026, 3, 3, 11)
H100, L40S = "gpu:nvidia-h100-80gb", "gpu:nvidia-l40s"
MIG = "mig:nvidia-a100-80gb:1g.10gb"
MEASURED = UsageRecord.Source.MEASURED


def _samples(first: datetime, last: datetime, value: float) -> list[tuple[float, float]]:
    """A sample every 30 s from `first` to `last` (both included), 15 s off the step grid as
    a scrape would be."""
    start, end = int(first.timestamp()), int(last.timestamp())
    return [(float(t), value) for t in range(start, end + 1, 30)]


def _at(h: int, m: int, s: int = 15) -> datetime:
    return datetime(2026, 3, 3, h, m, s, tzinfo=UTC)


def metering_series() -> Series:
    real = parse_text_exposition(SCRAPE.read_text())
    template = next(labels for name, labels, _ in real if name == "DCGM_FI_DEV_GPU_UTIL")

    def gpu(host, index, model, namespace, pod, *, host_label="Hostname", **extra):
        labels = {k: v for k, v in template.items() if k != "Hostname"}
        return labels | {
            host_label: host, "gpu": str(index), "device": f"nvidia{index}",
            "UUID": f"GPU-{host}-{index}", "modelName": model, "namespace": namespace,
            "pod": pod, "container": "main", **extra,
        }

    h100, a100, l40s = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S"
    utilization = [
        # acme: a GPU busy at 50 % from before the hour to after it …
        (gpu("gpu-a-001", 0, h100, "tenant-acme", "train-0"),
         _samples(_at(9, 30), _at(11, 29, 45), 50)),
        # … and a second one at 80 % for the hour's first half: one record for both
        (gpu("gpu-a-001", 1, h100, "tenant-acme", "train-1"),
         _samples(_at(10, 0), _at(10, 29, 45), 80)),
        # acme: a MIG instance on a host labelled the newer exporters' way (`hostname`)
        (gpu("gpu-b-002", 0, a100, "tenant-acme", "eval", host_label="hostname",
             GPU_I_PROFILE="1g.10gb", GPU_I_ID="3"), _samples(_at(9, 0), _at(11, 59, 45), 20)),
        # globex: one L40S from 10:20 to 11:20, seen through two containers of its pod
        (gpu("gpu-b-002", 1, l40s, "tenant-globex", "chat"),
         _samples(_at(10, 20), _at(11, 19, 45), 100)),
        (gpu("gpu-b-002", 1, l40s, "tenant-globex", "chat") | {"container": "sidecar"},
         _samples(_at(10, 20), _at(11, 19, 45), 100)),
        # the real scrape's GPU, used by a pod in `default`: no tenant's
        (template, _samples(_at(9, 0), _at(11, 59, 45), 0)),
    ]

    def allocation(namespace, pod, node, first, last, gpus):
        labels = {"namespace": namespace, "pod": pod, "container": "main", "node": node,
                  "instance": "opencost.opencost:9003", "job": "opencost"}
        return labels, _samples(first, last, gpus)

    opencost = [  # OpenCost ran during 10:00-11:00 only
        allocation("tenant-acme", "train-0", "gpu-a-001", _at(10, 0), _at(10, 59, 45), 1),
        allocation("tenant-acme", "train-1", "gpu-a-001", _at(10, 0), _at(10, 59, 45), 1),
        allocation("tenant-globex", "chat", "gpu-b-002", _at(10, 20), _at(10, 59, 45), 1),
        allocation("kube-system", "probe", "gpu-b-002", _at(10, 0), _at(10, 59, 45), 1),
    ]
    return {"DCGM_FI_DEV_GPU_UTIL": utilization, "container_gpu_allocation": opencost}


@pytest.fixture
def prometheus_url(prometheus_server, settings) -> str:
    server = prometheus_server(metering_series())
    settings.PROMETHEUS_URL = server.url
    return server.url


def holding(tenant, name: str, demand: dict, *, since: datetime) -> Workload:
    """A workload ready since `since` holding `demand` (its history: one ready event)."""
    workload = Workload.objects.create(tenant=tenant, kind="vm", name=name, demand=demand,
                                       ready_at=since, status="ready")
    WorkloadEvent.objects.create(workload=workload, kind="transition", from_status="provisioning",
                                 to_status="ready", demand=demand, created_at=since)
    return workload


@pytest.fixture
def allocations(tenant, other_tenant):
    """What the portal allocated: acme two H100s and a MIG slice, globex one L40S."""
    holding(tenant, "train", {H100: 2, "cpu": 16}, since=utc(2026, 3, 3, 9))
    holding(tenant, "eval", {MIG: 1}, since=utc(2026, 3, 3, 9))
    holding(other_tenant, "chat", {L40S: 1}, since=utc(2026, 3, 3, 9))


def measured() -> dict:
    return {
        (r.tenant.slug, r.hostname, r.resource, r.hour): (r.unit_seconds, r.busy_seconds)
        for r in UsageRecord.objects.filter(source=MEASURED).select_related("tenant")
    }


def test_an_hour_counts_exactly_its_steps(prometheus_server):
    server = prometheus_server(metering_series())
    present, busy = gpu_queries(hour=HOUR, step=30)

    counts = {
        (r["metric"].get("namespace"), r["metric"].get("UUID")): r["value"][1]
        for r in server.query(present)
    }
    sums = {
        (r["metric"].get("namespace"), r["metric"].get("UUID")): r["value"][1]
        for r in server.query(busy)
    }

    assert counts[("tenant-acme", "GPU-gpu-a-001-0")] == "120"  # the whole hour: 120 steps
    assert counts[("tenant-acme", "GPU-gpu-a-001-1")] == "60"
    assert counts[("tenant-globex", "GPU-gpu-b-002-1")] == "80"  # once, not per container
    assert sums[("tenant-acme", "GPU-gpu-a-001-0")] == str(120 * 50)


@pytest.mark.django_db
def test_measured_gpu_seconds_and_busy_seconds_per_tenant_host_and_class(
    prometheus_url, tenant, other_tenant, allocations
):
    metering.usage_meter_window(source="allocated", hour=HOUR)
    window = metering.usage_meter_window(source=MEASURED, hour=HOUR)

    assert window.status == "done", window.last_error
    assert measured() == {
        # 3 600 s at 50 % + 1 800 s at 80 %: 1 800 + 1 440 busy
        ("acme", "gpu-a-001", H100, HOUR): (5400, 3240),
        ("acme", "gpu-b-002", MIG, HOUR): (3600, 720),  # 20 % of the hour
        ("globex", "gpu-b-002", L40S, HOUR): (2400, 2400),  # 10:20-11:00, fully busy
    }
    assert (window.records, window.unit_seconds) == (3, 11400)
    event = AuditEvent.objects.get(action="usage.meter", changes__source=MEASURED)
    assert event.changes["unattributed_seconds"] == 3600  # the `default` namespace's GPU
    assert event.changes["busy_seconds"] == 3240 + 720 + 2400


@pytest.mark.django_db
def test_opencost_disagreeing_beyond_the_threshold_is_flagged(
    prometheus_url, tenant, other_tenant, allocations
):
    metering.usage_meter_hour(hour=HOUR)

    checks = {c.tenant.slug: c for c in CrossCheck.objects.select_related("tenant")}
    assert set(checks) == {"acme", "globex"}  # kube-system is no tenant's
    acme, globex = checks["acme"], checks["globex"]
    assert (acme.portal_gpu_seconds, acme.opencost_gpu_seconds) == (7200, 7200)
    assert (acme.difference_percent, acme.flagged) == (0, False)
    # OpenCost saw the L40S for 40 minutes of the hour the portal allocated it: -33.33 %
    assert (globex.portal_gpu_seconds, globex.opencost_gpu_seconds) == (3600, 2400)
    assert str(globex.difference_percent) == "-33.33" and globex.flagged


@pytest.mark.django_db
def test_the_threshold_is_a_setting(prometheus_url, settings, tenant, other_tenant, allocations):
    settings.METERING_OPENCOST_THRESHOLD_PERCENT = 40
    metering.usage_meter_hour(hour=HOUR)
    assert not CrossCheck.objects.filter(flagged=True).exists()


@pytest.mark.django_db
def test_without_opencost_series_there_is_no_cross_check(
    prometheus_url, tenant, other_tenant, allocations
):
    windows = metering.usage_meter_hour(hour=NEXT)

    assert [w.status for w in windows] == ["done", "done"]
    assert not CrossCheck.objects.exists()
    assert measured() == {
        ("acme", "gpu-a-001", H100, NEXT): (1800, 900),  # until 11:30
        ("acme", "gpu-b-002", MIG, NEXT): (3600, 720),
        ("globex", "gpu-b-002", L40S, NEXT): (1200, 1200),  # until 11:20
    }


@pytest.mark.django_db
def test_metering_the_measured_window_twice_replaces_its_rows(
    prometheus_url, tenant, other_tenant, allocations
):
    metering.usage_meter_hour(hour=HOUR)
    first, checks = measured(), list(CrossCheck.objects.values_list("tenant_id", "flagged"))
    metering.usage_meter_hour(hour=HOUR)

    assert measured() == first
    assert UsageRecord.objects.filter(source=MEASURED).count() == 3
    assert list(CrossCheck.objects.values_list("tenant_id", "flagged")) == checks


@pytest.mark.django_db
def test_prometheus_down_is_a_gap_and_a_later_sweep_fills_it(
    prometheus_server, prometheus_down_url, settings, tenant, other_tenant, allocations
):
    settings.METERING_LOOKBACK_HOURS = 2
    settings.METERING_START = HOUR  # the open billing period would reach back to February
    now = utc(2026, 3, 3, 12, 5)
    settings.PROMETHEUS_URL = prometheus_down_url

    assert metering.usage_meter_due(now=now) == 2  # the two allocated windows

    gaps = MeteringWindow.objects.filter(source=MEASURED).order_by("hour")
    assert [(w.hour, w.status) for w in gaps] == [(HOUR, "gap"), (NEXT, "gap")]
    assert all("PrometheusUnavailable" in w.last_error for w in gaps)
    assert not UsageRecord.objects.filter(source=MEASURED).exists()  # never a silent zero
    assert AuditEvent.objects.filter(action="usage.meter_gap").count() == 2

    metering.usage_meter_due(now=now)  # still down: retried, no new audit event
    assert [w.attempts for w in gaps.all()] == [2, 2]
    assert AuditEvent.objects.filter(action="usage.meter_gap").count() == 2

    settings.PROMETHEUS_URL = prometheus_server(metering_series()).url
    assert metering.usage_meter_due(now=now) == 2

    assert [(w.status, w.last_error) for w in gaps.all()] == [("done", ""), ("done", "")]
    assert measured()[("acme", "gpu-a-001", H100, HOUR)] == (5400, 3240)
    assert metering.usage_meter_due(now=now) == 0


@pytest.mark.django_db
def test_the_sweep_meters_the_look_backs_measured_windows_before_a_backlog(
    prometheus_url, settings, tenant, other_tenant, allocations
):
    """A day and more of measured windows never metered (the open billing period reaches
    back): the last hours, which the pages show, come first; the backlog after them."""
    settings.METERING_LOOKBACK_HOURS = 2
    settings.METERING_MAX_WINDOWS_PER_RUN = 2
    settings.METERING_START = utc(2026, 3, 2, 0)
    now = utc(2026, 3, 3, 12, 5)

    def done() -> list:
        return sorted(MeteringWindow.objects.filter(source=MEASURED, status="done")
                      .values_list("hour", flat=True))

    metering.usage_meter_due(now=now)
    assert done() == [HOUR, NEXT]
    assert MeteringWindow.objects.filter(source="allocated", status="done").count() == 36
    metering.usage_meter_due(now=now)
    assert done() == [utc(2026, 3, 2, 0), utc(2026, 3, 2, 1), HOUR, NEXT]
    assert measured()[("acme", "gpu-a-001", H100, HOUR)] == (5400, 3240)


@pytest.mark.django_db
def test_a_failed_rerun_keeps_the_rows_it_had(
    prometheus_url, prometheus_down_url, settings, tenant, other_tenant, allocations
):
    metering.usage_meter_window(source=MEASURED, hour=HOUR)
    before = measured()
    settings.PROMETHEUS_URL = prometheus_down_url

    window = metering.usage_meter_window(source=MEASURED, hour=HOUR)

    assert window.status == "gap"
    assert measured() == before


@pytest.mark.django_db
def test_without_prometheus_measured_metering_is_off_and_says_so(settings, tenant):
    settings.PROMETHEUS_URL = ""

    windows = metering.usage_meter_hour(hour=HOUR)
    assert [w.source for w in windows] == ["allocated"]  # the hour: measured skipped
    asked = metering.usage_meter_window(source=MEASURED, hour=HOUR)  # asked for directly

    assert asked.status == "gap"
    assert asked.last_error == "PROMETHEUS_URL is not set: measured metering is off."
    metering.usage_meter_due(now=HOUR + timedelta(hours=2))
    assert list(MeteringWindow.objects.filter(source=MEASURED).values_list("hour", flat=True)
                ) == [HOUR]  # the sweep creates none


@pytest.mark.parametrize(("labels", "resource"), [
    ({"modelName": "NVIDIA H100 80GB HBM3"}, "gpu:nvidia-h100-80gb"),
    ({"modelName": "NVIDIA RTX 4000 Ada Generation"}, "gpu:nvidia-rtx-4000-ada"),
    ({"modelName": "NVIDIA A100-SXM4-80GB", "GPU_I_PROFILE": "2g.20gb"},
     "mig:nvidia-a100-80gb:2g.20gb"),
    # a model the portal does not know keeps a class of its own: unpriced, never dropped
    ({"modelName": "Tesla T4"}, "gpu:tesla-t4"),
    ({}, "gpu:unknown"),
])
def test_dcgm_model_names_map_to_the_portals_classes(labels, resource):
    assert gpu_resource_class(labels) == resource


def test_the_difference_is_a_share_of_the_portals_seconds_either_way():
    assert difference_percent(portal=3600, opencost=3960) == Decimal("10.00")
    assert difference_percent(portal=3000, opencost=1000) == Decimal("-66.67")
    assert difference_percent(portal=0, opencost=60) == Decimal("100.00")
    checks = cross_checks(allocated={1: 3600, 2: 3600, 3: 0}, opencost={1: 3960, 2: 3961},
                          threshold=Decimal("10"))
    assert [(c.tenant_id, c.flagged) for c in checks] == [(1, False), (2, True)]
