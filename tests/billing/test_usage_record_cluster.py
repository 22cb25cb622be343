"""Issue 34, item 5: usage records carry the cluster (a workload's, a measured host's node's),
whichever path meters them (an hour, a span in SQL, measurements); the explorer sums allocated
GPU-hours by cluster. Prices and invoices do not change with it."""

from datetime import timedelta

import pytest

from billing.models import UsageRecord
from billing.selectors.explorer import UsageFilter
from billing.selectors.explorer.usage import ClusterUsage, gpu_hours_by_cluster
from billing.services import metering
from billing.services.metering_measured import MeasuredUsage, Measurement
from inventory.models import Cluster
from tenants.workloads.models import Workload, WorkloadEvent
from tests.factories import GPUFactory, NodeFactory

from .timeline import utc

HOUR = utc(2026, 3, 3, 8)
H100 = "gpu:nvidia-h100-80gb"


@pytest.fixture
def west(db):
    return Cluster.objects.create(slug="west", name="West")


def _running(tenant, name: str, *, cluster: str, gpus: int) -> Workload:
    workload = Workload.objects.create(
        tenant=tenant, kind="inference", name=name, cluster_id=cluster,
        demand={H100: gpus}, ready_at=HOUR - timedelta(hours=1),
    )
    WorkloadEvent.objects.create(workload=workload, kind="transition", to_status="ready",
                                 created_at=HOUR - timedelta(hours=1), demand={H100: gpus})
    return workload


def _clusters(source: str) -> dict[str, str]:
    return dict(UsageRecord.objects.filter(source=source).values_list("workload__name",
                                                                       "cluster"))


@pytest.mark.django_db
def test_an_hour_metered_records_each_workloads_cluster(tenant, west):
    _running(tenant, "chat", cluster="main", gpus=1)
    _running(tenant, "train", cluster="west", gpus=4)

    metering.usage_meter_window(source="allocated", hour=HOUR)

    assert _clusters("allocated") == {"chat": "main", "train": "west"}


@pytest.mark.django_db
def test_a_span_metered_in_sql_records_each_workloads_cluster(tenant, west):
    _running(tenant, "chat", cluster="main", gpus=1)
    _running(tenant, "train", cluster="west", gpus=4)

    metering.usage_meter_span(start=HOUR, end=HOUR + timedelta(hours=2))

    rows = set(UsageRecord.objects.values_list("workload__name", "hour", "cluster"))
    assert rows == {("chat", HOUR, "main"), ("chat", HOUR + timedelta(hours=1), "main"),
                    ("train", HOUR, "west"), ("train", HOUR + timedelta(hours=1), "west")}


@pytest.mark.django_db
def test_measured_records_carry_their_hosts_cluster(tenant, west):
    node = NodeFactory(hostname="gpu-west-1", k8s_name="gpu-west-1", cluster_id="west")
    GPUFactory(node=node, index=0)
    measurement = Measurement(usage=[
        MeasuredUsage(tenant_id=tenant.pk, hostname="gpu-west-1", resource=H100,
                      unit_seconds=3600, busy_seconds=1800),
        MeasuredUsage(tenant_id=tenant.pk, hostname="gone-host", resource=H100,
                      unit_seconds=3600, busy_seconds=1800),
    ], opencost=None, unattributed_seconds=0)

    metering.usage_meter_measurement(hour=HOUR, measurement=measurement)

    assert dict(UsageRecord.objects.values_list("hostname", "cluster")) == {
        "gpu-west-1": "west", "gone-host": "main"}


@pytest.mark.django_db
def test_the_explorer_sums_allocated_gpu_hours_by_cluster(tenant, west):
    _running(tenant, "chat", cluster="main", gpus=1)
    _running(tenant, "train", cluster="west", gpus=4)
    metering.usage_meter_span(start=HOUR, end=HOUR + timedelta(hours=2))

    day = utc(2026, 3, 3)
    by_cluster = gpu_hours_by_cluster(UsageFilter(start=day, end=day + timedelta(days=1)))

    assert by_cluster == [ClusterUsage("west", 8), ClusterUsage("main", 2)]


@pytest.mark.django_db
def test_the_explorer_page_shows_gpu_hours_by_cluster(login, finance, tenant, west):
    _running(tenant, "train", cluster="west", gpus=4)
    metering.usage_meter_span(start=HOUR, end=HOUR + timedelta(hours=2))

    page = login(finance).get("/billing/usage/", {"start": "2026-03-03", "end": "2026-03-03"})

    html = page.content.decode()
    assert 'id="usage-by-cluster"' in html
    assert '<tr data-cluster="west"><td class="font-monospace small">west</td>' in html
