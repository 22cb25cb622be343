"""Cordon, uncordon and drain, verified as requests on the Kubernetes API emulator."""

import pytest
from django.core import mail

from inventory.models import HealthEvent, Node, NodeState
from inventory.services import lifecycle
from tests.factories import MembershipFactory, NodeFactory, UserFactory

from .cluster_objects import RTX_LABELS, node, pod

NAME = "gpu-a-001"


@pytest.fixture
def cluster_node(kube_emulator):
    kube_emulator.put_object(node(NAME, RTX_LABELS | {"kubernetes.io/hostname": NAME}, gpus=8))
    return NodeFactory(hostname=NAME, k8s_name=NAME, state=NodeState.AVAILABLE)


def _patches(emulator) -> list:
    return emulator.requests("PATCH", f"/api/v1/nodes/{NAME}")


@pytest.mark.django_db
def test_cordon_and_uncordon_patch_the_kubernetes_node(
    kube_emulator, kube_gateway, cluster_node, platform_admin, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.node_cordon(node_id=cluster_node.pk, actor=platform_admin, reason="fan")
    assert kube_emulator.get_object("v1", "Node", NAME)["spec"]["unschedulable"] is True

    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.node_uncordon(node_id=cluster_node.pk, actor=platform_admin, reason="fixed")

    patches = _patches(kube_emulator)
    assert [p.data for p in patches] == [
        {"spec": {"unschedulable": True}},
        {"spec": {"unschedulable": False}},
    ]
    assert all(p.content_type.startswith("application/merge-patch+json") for p in patches)
    assert kube_emulator.get_object("v1", "Node", NAME)["spec"]["unschedulable"] is False
    assert Node.objects.get(pk=cluster_node.pk).k8s_unschedulable is False


@pytest.mark.django_db
def test_nothing_reaches_the_cluster_before_the_transaction_commits(
    kube_emulator, kube_gateway, cluster_node, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        lifecycle.node_cordon(node_id=cluster_node.pk, actor=None, reason="fan")
    assert len(callbacks) == 1
    assert _patches(kube_emulator) == []


@pytest.mark.django_db
def test_drain_evicts_through_the_api_honouring_a_disruption_budget_then_maintenance(
    kube_emulator, kube_gateway, cluster_node, tenant, tenant_owner, eager_retries,
    django_capture_on_commit_callbacks,
):
    Node.objects.filter(pk=cluster_node.pk).update(reserved_for="globex")
    MembershipFactory(tenant__slug="globex", role="owner",
                      user=UserFactory(username="gina", email="gina@globex.example"))
    kube_emulator.put_object(pod("train-0", "tenant-acme", NAME, gpus=4))
    kube_emulator.put_object(pod("dcgm-exporter-x", "gpu-operator", NAME, daemon_set=True))
    kube_emulator.put_object(pod("serve-0", "tenant-acme", "elsewhere", gpus=1))
    eviction = "/api/v1/namespaces/tenant-acme/pods/train-0/eviction"
    kube_emulator.fail(429, method="POST", path=eviction,
                       message="Cannot evict pod as it would violate the pod's disruption budget.")
    event = HealthEvent.objects.create(node=cluster_node, kind="xid", subject="gpu:3",
                                       severity="critical", detail="XID 79")

    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.node_drain(node_id=cluster_node.pk, actor=None, reason="XID 79",
                             health_event_id=event.pk)

    evictions = kube_emulator.requests("POST")
    assert [e.path for e in evictions] == [eviction, eviction]  # refused once, then accepted
    assert evictions[-1].data["apiVersion"] == "policy/v1"
    assert kube_emulator.get_object("v1", "Pod", "train-0", "tenant-acme") is None
    assert kube_emulator.get_object("v1", "Pod", "dcgm-exporter-x", "gpu-operator") is not None
    assert kube_emulator.get_object("v1", "Pod", "serve-0", "tenant-acme") is not None
    assert kube_emulator.get_object("v1", "Node", NAME)["spec"]["unschedulable"] is True
    cluster_node.refresh_from_db()
    assert cluster_node.state == NodeState.MAINTENANCE

    assert sorted(to for message in mail.outbox for to in message.to) == [
        "gina@globex.example", tenant_owner.email,
    ]
    assert "drained and moved to maintenance" in mail.outbox[0].subject
    assert "XID 79" in mail.outbox[0].body
    event.refresh_from_db()
    assert event.notified_tenants == ["acme", "globex"]


@pytest.mark.django_db
def test_a_drain_abandoned_by_an_admin_is_not_carried_on(
    kube_emulator, kube_gateway, cluster_node, django_capture_on_commit_callbacks
):
    kube_emulator.put_object(pod("train-0", "tenant-acme", NAME, gpus=4))
    with django_capture_on_commit_callbacks(execute=False) as queued:
        lifecycle.node_drain(node_id=cluster_node.pk, actor=None, reason="XID 79")
    lifecycle.node_transition(node_id=cluster_node.pk, target=NodeState.CORDONED, actor=None,
                              reason="keep it running after all")

    for callback in queued:
        callback()

    assert kube_emulator.requests("POST") == []
    assert Node.objects.get(pk=cluster_node.pk).state == NodeState.CORDONED


@pytest.mark.django_db
def test_the_demo_fleet_cordons_and_drains_too(
    simulated_gateway, login, platform_admin, django_capture_on_commit_callbacks
):
    simulated_gateway.apply(manifests=[
        node(NAME, RTX_LABELS | {"kubernetes.io/hostname": NAME}, gpus=8),
        pod("train-0", "tenant-acme", NAME, gpus=4),
    ])
    inventory_node = NodeFactory(hostname=NAME, k8s_name=NAME, state=NodeState.AVAILABLE)
    client = login(platform_admin)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/fleet/nodes/{inventory_node.pk}/action/",
                               {"action": "drain", "reason": "demo", "confirm": NAME},
                               follow=True)

    assert response.status_code == 200
    inventory_node.refresh_from_db()
    assert inventory_node.state == NodeState.MAINTENANCE
    stored = simulated_gateway.get(api_version="v1", kind="Node", name=NAME)
    assert stored["spec"]["unschedulable"] is True
    assert simulated_gateway.get(api_version="v1", kind="Pod", name="train-0",
                                 namespace="tenant-acme") is None


@pytest.mark.django_db
def test_a_drain_a_budget_keeps_refusing_stays_draining_shows_why_and_the_sync_resumes_it(
    kube_emulator, kube_gateway, cluster_node, tenant, tenant_owner, platform_admin, login,
    eager_retries, django_capture_on_commit_callbacks,
):
    from datetime import timedelta

    from django.utils import timezone

    from inventory.services.sync import cluster_sync
    from inventory.tasks import node_drain_task

    kube_emulator.put_object(pod("train-0", "tenant-acme", NAME, gpus=4))
    kube_emulator.put_object(pod("eval-1", "tenant-acme", NAME, gpus=1))
    eviction = "/api/v1/namespaces/tenant-acme/pods/train-0/eviction"
    attempts = node_drain_task.max_retries + 1
    kube_emulator.fail(429, method="POST", path=eviction, times=attempts,
                       message="Cannot evict pod as it would violate the pod's disruption budget.")
    event = HealthEvent.objects.create(node=cluster_node, kind="xid", subject="gpu:3",
                                       severity="critical", detail="XID 79", remediation="drain")

    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.node_drain(node_id=cluster_node.pk, actor=platform_admin, reason="XID 79",
                             health_event_id=event.pk)

    # Every attempt evicted what it could; the budget held one pod on the node throughout.
    assert len(kube_emulator.requests("POST", eviction)) == attempts
    assert kube_emulator.get_object("v1", "Pod", "eval-1", "tenant-acme") is None
    assert kube_emulator.get_object("v1", "Pod", "train-0", "tenant-acme") is not None
    cluster_node.refresh_from_db()
    assert cluster_node.state == NodeState.DRAINING
    assert cluster_node.drain_note.startswith("1 pod left: tenant-acme/train-0 refused")
    assert "disruption budget" in cluster_node.drain_note
    assert mail.outbox == []

    # The node page polls the drain's live status while it lasts.
    client = login(platform_admin)
    status = client.get(f"/fleet/nodes/{cluster_node.pk}/?status=1", HTTP_HX_REQUEST="true")
    body = status.content.decode()
    assert 'hx-trigger="every 3s"' in body and "tenant-acme/train-0 refused" in body
    assert "HX-Refresh" not in status.headers
    page = client.get(f"/fleet/nodes/{cluster_node.pk}/").content.decode()
    assert 'id="drain-progress"' in page and 'id="action-stop-drain"' in page

    # The budget relents; a drain stuck for a while is resumed by the periodic sync.
    Node.objects.filter(pk=cluster_node.pk).update(
        state_changed_at=timezone.now() - timedelta(minutes=20)
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = cluster_sync(cluster="main")

    assert run.summary["drains_resumed"] == [NAME]
    cluster_node.refresh_from_db()
    assert (cluster_node.state, cluster_node.drain_note) == (NodeState.MAINTENANCE, "")
    assert kube_emulator.get_object("v1", "Pod", "train-0", "tenant-acme") is None
    event.refresh_from_db()
    assert event.notified_tenants == ["acme"]
    assert [m.to for m in mail.outbox] == [[tenant_owner.email]]

    done = client.get(f"/fleet/nodes/{cluster_node.pk}/?status=1", HTTP_HX_REQUEST="true")
    assert done.headers["HX-Refresh"] == "true"
    assert "hx-trigger" not in done.content.decode()


@pytest.mark.django_db
def test_an_admin_stops_a_drain_from_the_node_page(
    kube_emulator, kube_gateway, cluster_node, platform_admin, login,
    django_capture_on_commit_callbacks,
):
    kube_emulator.put_object(pod("train-0", "tenant-acme", NAME, gpus=4))
    with django_capture_on_commit_callbacks(execute=False) as queued:
        lifecycle.node_drain(node_id=cluster_node.pk, actor=None, reason="XID 79")

    response = login(platform_admin).post(
        f"/fleet/nodes/{cluster_node.pk}/action/",
        {"action": "stop-drain", "reason": "the job must finish first"}, follow=True,
    )
    for callback in queued:
        callback()

    assert response.status_code == 200
    assert Node.objects.get(pk=cluster_node.pk).state == NodeState.CORDONED
    assert kube_emulator.requests("POST") == []  # the queued drain found nothing to do
    assert kube_emulator.get_object("v1", "Node", NAME)["spec"]["unschedulable"] is True
