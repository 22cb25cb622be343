"""Health ingestion from a real Prometheus loaded with DCGM series, and the remediation policy."""

import re

import pytest
from django.core import mail

from core.models import AuditEvent
from core.prometheus import PrometheusUnavailable
from inventory.models import GPU, HealthEvent, InventoryRun, Node, NodeState
from inventory.services.health import health_ingest
from inventory.tasks import health_ingest_task
from tests.factories import GPUFactory, NodeFactory

from .cluster_objects import RTX_LABELS, node, pod
from .dcgm_series import FAULTS, HEALTHY_HOST, gpu_uuid


def _inventory(**states) -> dict[str, Node]:
    """Every host of the series in the inventory, 8 H100s each, GPUs not yet named."""
    nodes = {}
    for host in [HEALTHY_HOST, *FAULTS]:
        nodes[host] = NodeFactory(hostname=host, k8s_name=host,
                                  state=states.get(host, NodeState.AVAILABLE))
        for index in range(8):
            GPUFactory(node=nodes[host], index=index, uuid=None)
    return nodes


@pytest.fixture
def no_remediation(settings):
    settings.REMEDIATION_CORDON_AT = "off"
    settings.REMEDIATION_DRAIN_AT = "off"


@pytest.mark.django_db
def test_dcgm_faults_open_health_events_with_their_severity(
    dcgm_prometheus, settings, no_remediation
):
    settings.PROMETHEUS_URL = dcgm_prometheus.url
    nodes = _inventory()

    run = health_ingest()

    assert run.ok, run.error
    # increase() extrapolates to the window's edges: counts are "about", hence the patterns.
    events = {
        (e.node.hostname, e.kind, e.subject): (e.severity, e.detail)
        for e in HealthEvent.objects.select_related("node")
    }
    expected = {
        ("gpu-xid-001", "xid", "gpu:3"): ("critical", r"XID 79: GPU has fallen off the bus"),
        ("gpu-dbe-001", "ecc-dbe", "gpu:1"):
            ("critical", r"2 uncorrectable \(double-bit\) ECC errors"),
        ("gpu-therm-001", "thermal-violation", "gpu:0"):
            ("warning", r"Thermally throttled for 1[23]\d\.\d s in the last 10 min"),
        ("gpu-power-001", "power-violation", "gpu:2"):
            ("info", r"Power throttled for [56]\.\d s in the last 10 min"),
        ("gpu-nvl-001", "nvlink-errors", "gpu:5"): ("warning", r"3\d NVLink errors"),
        ("gpu-pages-001", "retired-pages", "gpu:4"):
            ("warning", r"1 memory pages retired or pending retirement"),
    }
    assert set(events) == set(expected)
    for key, (severity, detail) in expected.items():
        assert events[key][0] == severity, key
        assert re.fullmatch(detail, events[key][1]), events[key]
    assert not HealthEvent.objects.filter(node=nodes[HEALTHY_HOST]).exists()  # the real scrape
    xid_gpu = GPU.objects.get(node=nodes["gpu-xid-001"], index=3)
    assert xid_gpu.health == GPU.Health.FAILED
    assert xid_gpu.uuid == gpu_uuid("gpu-xid-001", 3)  # named by DCGM
    assert GPU.objects.get(node=nodes["gpu-therm-001"], index=0).health == GPU.Health.DEGRADED
    dbe_gpu = GPU.objects.get(node=nodes["gpu-dbe-001"], index=1)
    assert (dbe_gpu.ecc_sbe_count, dbe_gpu.ecc_dbe_count, dbe_gpu.retired_pages) == (12, 2, 4)
    assert Node.objects.filter(state=NodeState.AVAILABLE).count() == len(nodes)  # policy off
    assert run.summary["opened"] == 6 and run.summary["unknown_hosts"] == []


@pytest.mark.django_db
def test_ingesting_the_same_window_twice_opens_nothing_new(
    dcgm_prometheus, settings, no_remediation
):
    settings.PROMETHEUS_URL = dcgm_prometheus.url
    _inventory()
    health_ingest()
    first = list(HealthEvent.objects.values_list("pk", "severity").order_by("pk"))

    second = health_ingest()

    assert list(HealthEvent.objects.values_list("pk", "severity").order_by("pk")) == first
    assert (second.summary["opened"], second.summary["updated"]) == (0, 6)


@pytest.mark.django_db
def test_hosts_not_in_the_inventory_are_reported_not_invented(
    dcgm_prometheus, settings, no_remediation
):
    settings.PROMETHEUS_URL = dcgm_prometheus.url
    NodeFactory(hostname="gpu-xid-001", k8s_name="gpu-xid-001")

    run = health_ingest()

    assert HealthEvent.objects.count() == 1
    assert "gpu-dbe-001" in run.summary["unknown_hosts"]
    assert Node.objects.count() == 1


@pytest.mark.django_db
def test_policy_drains_critical_faults_and_cordons_warnings_through_the_api(
    dcgm_prometheus, settings, kube_emulator, kube_gateway, tenant, tenant_owner,
    eager_retries, django_capture_on_commit_callbacks,
):
    settings.PROMETHEUS_URL = dcgm_prometheus.url
    nodes = _inventory()
    for host in nodes:
        kube_emulator.put_object(node(host, RTX_LABELS | {"kubernetes.io/hostname": host}, gpus=8))
    kube_emulator.put_object(pod("train-0", "tenant-acme", "gpu-xid-001", gpus=8))
    Node.objects.filter(hostname="gpu-therm-001").update(
        placed_pods=[{"namespace": "tenant-acme", "name": "eval-0", "gpus": 1, "mig": {}}]
    )

    with django_capture_on_commit_callbacks(execute=True):
        health_ingest_task.delay()

    states = dict(Node.objects.values_list("hostname", "state"))
    assert states["gpu-xid-001"] == NodeState.MAINTENANCE
    assert states["gpu-dbe-001"] == NodeState.MAINTENANCE
    assert states["gpu-therm-001"] == NodeState.CORDONED
    assert states["gpu-nvl-001"] == NodeState.CORDONED
    assert states["gpu-pages-001"] == NodeState.CORDONED
    assert states["gpu-power-001"] == NodeState.AVAILABLE  # info: recorded, not acted on
    assert states[HEALTHY_HOST] == NodeState.AVAILABLE

    evictions = kube_emulator.requests("POST")
    assert [e.path for e in evictions] == ["/api/v1/namespaces/tenant-acme/pods/train-0/eviction"]
    for host in ("gpu-xid-001", "gpu-dbe-001", "gpu-therm-001", "gpu-nvl-001", "gpu-pages-001"):
        assert kube_emulator.get_object("v1", "Node", host)["spec"]["unschedulable"] is True
    assert kube_emulator.requests("PATCH", "/api/v1/nodes/gpu-power-001") == []

    remediations = dict(HealthEvent.objects.values_list("node__hostname", "remediation"))
    assert remediations["gpu-xid-001"] == "drain" and remediations["gpu-therm-001"] == "cordon"
    subjects = sorted(m.subject for m in mail.outbox)
    assert subjects == [
        "[AI Factory] Node gpu-therm-001 was cordoned",
        "[AI Factory] Node gpu-xid-001 was drained and moved to maintenance",
    ]
    assert all(m.to == [tenant_owner.email] for m in mail.outbox)


@pytest.mark.django_db
def test_the_remediation_policy_is_configurable(
    dcgm_prometheus, settings, kube_emulator, kube_gateway, django_capture_on_commit_callbacks
):
    settings.PROMETHEUS_URL = dcgm_prometheus.url
    settings.REMEDIATION_CORDON_AT = "critical"
    settings.REMEDIATION_DRAIN_AT = "off"
    nodes = _inventory()
    for host in nodes:
        kube_emulator.put_object(node(host, RTX_LABELS | {"kubernetes.io/hostname": host}, gpus=8))

    with django_capture_on_commit_callbacks(execute=True):
        health_ingest()

    states = dict(Node.objects.values_list("hostname", "state"))
    assert states["gpu-xid-001"] == NodeState.CORDONED
    assert states["gpu-therm-001"] == NodeState.AVAILABLE
    assert kube_emulator.requests("POST") == []


@pytest.mark.django_db
def test_a_fault_on_a_node_already_out_of_service_changes_no_state(
    dcgm_prometheus, settings, django_capture_on_commit_callbacks
):
    settings.PROMETHEUS_URL = dcgm_prometheus.url
    _inventory(**{"gpu-xid-001": NodeState.MAINTENANCE, "gpu-therm-001": NodeState.VALIDATING})

    with django_capture_on_commit_callbacks(execute=True):
        health_ingest()

    states = dict(Node.objects.values_list("hostname", "state"))
    assert (states["gpu-xid-001"], states["gpu-therm-001"]) == ("maintenance", "validating")
    assert states["gpu-dbe-001"] == "maintenance"  # the other faulty nodes were acted on
    assert HealthEvent.objects.get(node__hostname="gpu-xid-001").remediation == "none"
    moved = set(
        AuditEvent.objects.filter(action="node.transition").values_list("object_repr", flat=True)
    )
    assert moved.isdisjoint({"gpu-xid-001", "gpu-therm-001"})


@pytest.mark.django_db
def test_prometheus_down_is_recorded_and_retried_and_the_fleet_page_still_renders(
    prometheus_down_url, settings, eager_retries, platform_admin, login
):
    settings.PROMETHEUS_URL = prometheus_down_url
    settings.PROMETHEUS_TIMEOUT = 1

    result = health_ingest_task.delay()

    assert result.state == "FAILURE"
    assert isinstance(result.result, PrometheusUnavailable)
    runs = InventoryRun.objects.filter(kind="health-ingest")
    assert runs.count() == 4 and not runs.filter(ok=True).exists()
    assert "ConnectionError" in runs.first().error

    response = login(platform_admin).get("/fleet/")
    assert response.status_code == 200
    assert "Health ingestion failed" in response.content.decode()
