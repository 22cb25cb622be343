"""The drain confirmations (the node's page and Django admin's action) list the tenants and
workloads the drain interrupts, as the last cluster sync saw them; nothing moves before yes."""

import re

import pytest

from inventory.models import Node, NodeState
from tests.factories import NodeFactory, TenantFactory

PODS = [
    {"namespace": "tenant-helix", "name": "pretrain-worker-0", "gpus": 8, "mig": {}},
    {"namespace": "tenant-nova", "name": "chat-predictor-7f9c", "gpus": 1, "mig": {}},
    {"namespace": "tenant-nova", "name": "rerank-predictor-2b1d", "gpus": 0, "mig": {}},
    {"namespace": "kube-system", "name": "dcgm-exporter-abc", "gpus": 0, "mig": {}},
]


@pytest.fixture
def busy_node(db):
    TenantFactory(slug="helix", name="Helix Research")
    TenantFactory(slug="nova", name="Nova Inference")
    TenantFactory(slug="orbit", name="Orbit Fine-tuning")
    node = NodeFactory(hostname="gpu-ams1-007", state=NodeState.CORDONED, reserved_for="orbit")
    Node.objects.filter(pk=node.pk).update(placed_pods=PODS)
    return node


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_the_node_page_drain_confirmation_names_tenants_and_workloads(busy_node, login,
                                                                      platform_admin):
    asked = login(platform_admin).post(f"/fleet/nodes/{busy_node.pk}/action/",
                                       {"action": "drain", "reason": "XID 79 on GPU 3"})
    text = _text(re.search(r'<ul class="mb-3" id="confirm-consequences">.*?</ul>',
                           asked.content.decode(), re.S).group(0))

    assert asked.status_code == 200
    assert "Tenants affected: Helix Research, Nova Inference, Orbit Fine-tuning." in text
    assert "Workloads of Helix Research: pretrain-worker-0 (8 GPUs)." in text
    assert ("Workloads of Nova Inference: chat-predictor-7f9c (1 GPU), "
            "rerank-predictor-2b1d.") in text
    assert "Orbit Fine-tuning: nothing running (the node is reserved for it)." in text
    assert "System pods also evicted: kube-system/dcgm-exporter-abc." in text
    busy_node.refresh_from_db()
    assert busy_node.state == NodeState.CORDONED


def test_the_admin_drain_confirmation_names_tenants_and_workloads_per_node(busy_node, login,
                                                                           platform_admin):
    quiet = NodeFactory(hostname="gpu-ams1-008", state=NodeState.CORDONED)
    asked = login(platform_admin).post(
        "/admin/inventory/node/",
        {"action": "action_drain", "_selected_action": [busy_node.pk, quiet.pk]},
    )
    page = asked.content.decode()
    busy = _text(re.search(r'<li data-node="gpu-ams1-007">.*?</ul>', page, re.S).group(0))

    assert "interrupts Helix Research, Nova Inference, Orbit Fine-tuning" in busy
    assert "pretrain-worker-0 (8 GPUs)" in busy and "chat-predictor-7f9c (1 GPU)" in busy
    assert "Orbit Fine-tuning (reserved for it): nothing running" in busy
    assert re.search(r'<li data-node="gpu-ams1-008">.*?no tenant.s workload at the last sync',
                     page, re.S)
    assert set(Node.objects.values_list("state", flat=True)) == {NodeState.CORDONED}


def test_once_confirmed_the_message_says_the_state_the_node_is_in(
    busy_node, login, platform_admin, django_capture_on_commit_callbacks
):
    client = login(platform_admin)
    with django_capture_on_commit_callbacks(execute=False):
        done = client.post(f"/fleet/nodes/{busy_node.pk}/action/",
                           {"action": "drain", "reason": "XID 79", "confirm": "gpu-ams1-007"},
                           follow=True)
    busy_node.refresh_from_db()
    page = done.content.decode()
    assert busy_node.state == NodeState.DRAINING  # its evictions wait for the commit
    assert "gpu-ams1-007: draining: evicting its pods" in page
    assert "gpu-ams1-007: maintenance." not in page
