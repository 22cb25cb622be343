"""A cluster that does not answer: marked unreachable with a backoff by the gateway registry,
failing fast until its next try, probed, and recovered once — against the Kubernetes API
emulator over HTTP, reached through the real registry (a kubeconfig file per cluster)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from core.fleet import ClusterUnreachable, TransientFleetError, get_gateway
from core.models import AuditEvent
from inventory.models import Cluster, InventoryRun
from inventory.services.reachability import (
    cluster_connection_check,
    cluster_probe,
    clusters_probe_sweep,
)
from tests.support.clusters import emulated_cluster

from .cluster_objects import RTX_LABELS, RTX_NODE, node


@pytest.fixture
def fleet(settings, kube_emulator, tmp_path, transactional_db):
    settings.FLEET_BACKEND = "kubernetes"
    settings.FLEET_REQUEST_TIMEOUT = 2.0
    settings.CLUSTER_BACKOFF_SECONDS = 10.0
    settings.CLUSTER_BACKOFF_MAX_SECONDS = 25.0
    kube_emulator.put_object(node(RTX_NODE, RTX_LABELS, gpus=1))
    return emulated_cluster(kube_emulator, "east", tmp_path, name="East")


def _row(slug: str = "east") -> Cluster:
    return Cluster.objects.get(slug=slug)


def _audits(action: str) -> int:
    return AuditEvent.objects.filter(action=action).count()


def _due_now(slug: str = "east") -> None:
    Cluster.objects.filter(slug=slug).update(next_probe_at=timezone.now() - timedelta(seconds=1))


def test_a_refused_connection_marks_the_cluster_unreachable_and_later_calls_fail_fast(
    fleet, kube_emulator
):
    kube_emulator.down()
    with pytest.raises(TransientFleetError) as refused:
        get_gateway("east").list_nodes()
    assert not isinstance(refused.value, ClusterUnreachable)

    row = _row()
    assert (row.reachable, row.failures) == (False, 1)
    assert row.unreachable_since is not None and row.last_error
    wait = (row.next_probe_at - timezone.now()).total_seconds()
    assert 8 < wait <= 10
    assert _audits("cluster.unreachable") == 1

    kube_emulator.up()  # it answers again, but its next try is not due: nothing is asked
    with kube_emulator.recording() as calls, pytest.raises(ClusterUnreachable) as fast:
        get_gateway("east").list_nodes()
    assert calls == []
    message = str(fast.value)
    assert "'east' is unreachable since" in message
    assert row.unreachable_since.strftime("%Y-%m-%d %H:%M:%S") in message
    assert row.last_error in message and "tried again at" in message
    assert _row().failures == 1  # a fast failure is not another try
    assert _audits("cluster.unreachable") == 1


def test_each_failed_try_doubles_the_wait_up_to_the_most_and_keeps_since_when(fleet, kube_emulator):
    kube_emulator.down()
    with pytest.raises(TransientFleetError):
        get_gateway("east").list_nodes()
    since = _row().unreachable_since
    waits = []
    for _ in range(3):
        _due_now()
        with pytest.raises(TransientFleetError):
            get_gateway("east").probe()
        row = _row()
        waits.append(round((row.next_probe_at - timezone.now()).total_seconds()))
    assert waits == [20, 25, 25]
    assert (row.failures, row.unreachable_since) == (4, since)
    assert _audits("cluster.unreachable") == 1


def test_the_first_answer_marks_it_reachable_and_queues_its_recovery_once(fleet, kube_emulator):
    kube_emulator.down()
    with pytest.raises(TransientFleetError):
        get_gateway("east").list_nodes()
    kube_emulator.up()
    _due_now()

    assert [n["metadata"]["name"] for n in get_gateway("east").list_nodes()] == [RTX_NODE]

    row = _row()
    assert (
        row.reachable,
        row.failures,
        row.unreachable_since,
        row.next_probe_at,
        row.last_error,
    ) == (True, 0, None, None, "")
    assert row.last_contact_at is not None
    assert _audits("cluster.reachable") == 1
    # The recovery (eager here): the cluster's sync ran, and read its node.
    syncs = InventoryRun.objects.filter(cluster_id="east", kind=InventoryRun.Kind.CLUSTER_SYNC)
    assert syncs.count() == 1 and syncs.get().ok

    get_gateway("east").list_nodes()  # answering as it should: nothing recorded, nothing queued
    assert _audits("cluster.reachable") == 1 and syncs.count() == 1


@pytest.mark.parametrize("status", [409, 429, 500])
def test_an_answer_that_is_an_error_does_not_make_the_cluster_unreachable(
    fleet, kube_emulator, status
):
    kube_emulator.fail(status, method="GET", path="/api/v1/nodes")
    with pytest.raises(TransientFleetError):
        get_gateway("east").list_nodes()
    assert _row().reachable
    assert get_gateway("east").list_nodes()


def test_a_gateway_in_front_that_cannot_reach_the_cluster_makes_it_unreachable(
    fleet, kube_emulator
):
    kube_emulator.fail(503, method="GET", path="/api/v1/nodes")
    with pytest.raises(TransientFleetError):
        get_gateway("east").list_nodes()
    assert not _row().reachable


def test_the_probe_records_contact_and_notices_an_idle_cluster_going_away(fleet, kube_emulator):
    assert cluster_probe(cluster="east") == "v1.33.0-kmock"
    assert _row().last_contact_at is not None and _row().reachable

    kube_emulator.down()
    assert clusters_probe_sweep() == 2  # east and main, each on its own queue (eager here)
    assert not _row().reachable
    assert clusters_probe_sweep() == 1  # east waits for its next try; main is probed
    kube_emulator.up()
    _due_now()
    assert clusters_probe_sweep() == 2
    assert _row().reachable


def test_a_retired_cluster_is_not_probed(fleet):
    Cluster.objects.filter(slug="east").update(state=Cluster.State.RETIRED)
    assert clusters_probe_sweep() == 1


def test_an_admins_connection_check_tries_even_while_waiting_and_is_audited(
    fleet, kube_emulator, platform_admin
):
    kube_emulator.down()
    failed = cluster_connection_check(cluster=fleet, actor=platform_admin)
    assert not failed.ok and "Connection" in failed.error
    assert not _row().reachable

    kube_emulator.up()
    checked = cluster_connection_check(cluster=fleet, actor=platform_admin)  # not due: tried
    assert checked.ok and checked.version == "v1.33.0-kmock"
    assert _row().reachable
    events = AuditEvent.objects.filter(action="cluster.connection_check").order_by("pk")
    assert [e.changes.get("ok") for e in events] == [False, True]
    assert {e.actor_id for e in events} == {platform_admin.pk}


def test_the_admin_action_says_whether_each_cluster_answers(
    fleet, kube_emulator, client, platform_admin
):
    client.force_login(platform_admin)

    def check() -> str:
        response = client.post(
            "/admin/inventory/cluster/",
            {"action": "check_connection", "_selected_action": [fleet.pk]},
            follow=True,
        )
        assert response.status_code == 200
        return response.content.decode()

    assert "East answers: Kubernetes v1.33.0-kmock." in check()
    kube_emulator.down()
    assert "East does not answer:" in check()
    listing = client.get("/admin/inventory/cluster/").content.decode()
    assert "status-unreachable" in listing


def test_a_cluster_added_in_admin_is_saved_audited_and_keeps_its_slug(client, platform_admin):
    client.force_login(platform_admin)
    response = client.post(
        "/admin/inventory/cluster/add/",
        {"slug": "west", "name": "West", "credentials": "kubeconfig",
         "kubeconfig_path": "/etc/portal/west.kubeconfig", "state": "active"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    west = Cluster.objects.get(slug="west")
    assert AuditEvent.objects.filter(action="cluster.create", object_id=str(west.pk)).exists()
    Cluster.objects.filter(pk=west.pk).update(reachable=False, last_error="refused")

    client.post(
        f"/admin/inventory/cluster/{west.pk}/change/",
        {"slug": "renamed", "name": "West hall", "credentials": "kubeconfig",
         "kubeconfig_path": "/etc/portal/west.kubeconfig", "state": "draining"},
    )
    west = Cluster.objects.get(pk=west.pk)
    assert (west.slug, west.name, west.state) == ("west", "West hall", "draining")
    assert (west.reachable, west.last_error) == (False, "refused")  # the portal's, kept
