"""Health ingestion per cluster: each cluster's DCGM exporters are read from its own Prometheus
(or the fleet's), and a Prometheus that does not answer keeps no other's findings out."""

import pytest

from core.prometheus import PrometheusUnavailable
from inventory.models import Cluster, HealthEvent, InventoryRun
from inventory.services.health import health_ingest, prometheus_watching
from tests.factories import GPUFactory, NodeFactory

from .dcgm_series import FAULTS, HEALTHY_HOST

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_remediation(settings):
    settings.REMEDIATION_CORDON_AT = "off"
    settings.REMEDIATION_DRAIN_AT = "off"


def _hosts_on(cluster: str, hosts: list[str], *, prefix: str = "") -> None:
    for host in hosts:
        node = NodeFactory(cluster_id=cluster, hostname=f"{prefix}{host}", k8s_name=host)
        for index in range(8):
            GPUFactory(node=node, index=index, uuid=None)


def test_each_cluster_is_read_from_its_own_prometheus_and_one_down_holds_up_no_other(
    dcgm_prometheus, prometheus_down_url, settings, no_remediation
):
    settings.PROMETHEUS_URL = prometheus_down_url  # the fleet's: main's, and it is down
    Cluster.objects.create(slug="west", name="West", prometheus_url=dcgm_prometheus.url)
    Cluster.objects.create(slug="old", name="Old", state=Cluster.State.RETIRED,
                           prometheus_url="http://127.0.0.1:9/")
    _hosts_on("west", [HEALTHY_HOST, *FAULTS])
    # The same Kubernetes names on main: the west Prometheus's series are not theirs.
    _hosts_on("main", list(FAULTS), prefix="main-")

    assert prometheus_watching() == {prometheus_down_url: ["main"],
                                     dcgm_prometheus.url: ["west"]}
    with pytest.raises(PrometheusUnavailable):
        health_ingest()

    assert set(HealthEvent.objects.values_list("node__cluster_id", flat=True)) == {"west"}
    assert HealthEvent.objects.count() == len(FAULTS)
    west, main = (InventoryRun.objects.get(kind=InventoryRun.Kind.HEALTH_INGEST, cluster_id=c)
                  for c in ("west", "main"))
    assert west.ok and west.summary["opened"] == len(FAULTS)
    assert west.summary["clusters"] == ["west"] and west.summary["unknown_hosts"] == []
    assert not main.ok and main.error


def test_clusters_without_a_prometheus_of_their_own_share_the_fleets(dcgm_prometheus, settings,
                                                                    no_remediation):
    settings.PROMETHEUS_URL = dcgm_prometheus.url
    Cluster.objects.create(slug="west", name="West")
    _hosts_on("west", list(FAULTS)[:2])
    _hosts_on("main", list(FAULTS)[2:])

    run = health_ingest()

    assert prometheus_watching() == {dcgm_prometheus.url: ["main", "west"]}
    assert run.ok and run.cluster_id is None and run.summary["clusters"] == ["main", "west"]
    assert HealthEvent.objects.count() == len(FAULTS)
