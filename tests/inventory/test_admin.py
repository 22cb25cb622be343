"""Django admin: lifecycle actions call the same services; state cannot be edited directly."""

import pytest

from core.models import AuditEvent
from inventory.models import Node, NodeState
from tests.factories import NodeFactory


def _act(client, action: str, *nodes, confirm: str = "yes"):
    return client.post(
        "/admin/inventory/node/",
        {"action": action, "_selected_action": [n.pk for n in nodes], "confirm": confirm},
        follow=True,
    )


@pytest.mark.django_db
def test_admin_actions_cordon_uncordon_drain_and_return_nodes_to_service(
    login, platform_admin, django_capture_on_commit_callbacks
):
    a = NodeFactory(state=NodeState.AVAILABLE)
    b = NodeFactory(state=NodeState.AVAILABLE)
    client = login(platform_admin)

    for action, nodes in (("action_cordon", [a, b]), ("action_uncordon", [b]),
                          ("action_drain", [a]), ("action_return_to_service", [a, b])):
        with django_capture_on_commit_callbacks(execute=True):  # each request commits
            response = _act(client, action, *nodes)

    states = dict(Node.objects.values_list("pk", "state"))
    assert states == {a.pk: NodeState.AVAILABLE, b.pk: NodeState.AVAILABLE}
    assert "cannot go from available to available" in response.content.decode()
    moves = AuditEvent.objects.filter(action="node.transition", actor=platform_admin)
    assert moves.filter(changes__reason="cordon from Django admin").count() == 2
    # a: cordoned, draining, (maintenance: the drain's end, by the system), available
    assert moves.filter(object_id=str(a.pk)).count() == 3
    assert AuditEvent.objects.filter(action="node.transition", actor=None).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["action_drain", "action_return_to_service"])
def test_draining_or_returning_from_the_admin_asks_first_naming_every_node(
    login, platform_admin, action
):
    nodes = [NodeFactory(hostname=f"gpu-x-{i}", state=NodeState.CORDONED) for i in range(2)]
    asked = _act(login(platform_admin), action, *nodes, confirm="")

    page = asked.content.decode()
    assert 'id="confirm-form"' in page and "gpu-x-0" in page and "gpu-x-1" in page
    assert set(Node.objects.values_list("state", flat=True)) == {NodeState.CORDONED}
    assert not AuditEvent.objects.filter(action="node.transition").exists()


@pytest.mark.django_db
def test_the_admin_form_cannot_change_the_lifecycle_state(login, platform_admin):
    node = NodeFactory(state=NodeState.AVAILABLE)
    client = login(platform_admin)

    page = client.get(f"/admin/inventory/node/{node.pk}/change/")

    assert page.status_code == 200
    assert 'name="state"' not in page.content.decode()
