"""Destructive page actions ask first, naming the object, and the server refuses them unasked.

Drain, retire, returning a node with open critical faults to service, revoking a token,
withdrawing a quota request and removing a member each answer a confirmation page on their
first POST; only a POST whose `confirm` names the object acts.
"""

import pytest
from django.urls import reverse
from django.utils import timezone

from core.models import ApiToken, AuditEvent
from core.tokens import api_token_create
from inventory.models import GPU, HealthEvent, NodeState
from tenants.models import Membership, QuotaRequest
from tests.factories import GPUFactory, NodeFactory

pytestmark = pytest.mark.django_db


def _critical_fault(node):
    gpu = GPUFactory(node=node, index=0, health=GPU.Health.FAILED)
    return HealthEvent.objects.create(node=node, gpu=gpu, kind="ecc-dbe", subject="gpu:0",
                                      severity="critical", detail="DBE 3")


@pytest.mark.parametrize(
    ("state", "action", "target"),
    [
        (NodeState.AVAILABLE, "drain", NodeState.MAINTENANCE),
        (NodeState.MAINTENANCE, "retire", NodeState.RETIRED),
        (NodeState.MAINTENANCE, "return-to-service", NodeState.AVAILABLE),
    ],
)
def test_a_destructive_node_action_needs_the_node_name_typed(
    login, platform_admin, state, action, target, django_capture_on_commit_callbacks
):
    # Wiped and reset: the only thing between a node in maintenance and retirement is the question.
    node = NodeFactory(hostname="gpu-h200-07", state=state, disks_wiped_at=timezone.now(),
                       bmc_reset_at=timezone.now())
    event = _critical_fault(node)
    client = login(platform_admin)
    url = reverse("inventory:node-action", args=[node.pk])

    asked = client.post(url, {"action": action, "reason": "XID 79 twice"})
    wrong = client.post(url, {"action": action, "reason": "XID 79 twice", "confirm": "gpu-h200"})

    node.refresh_from_db()
    event.refresh_from_db()
    assert node.state == state and event.resolved_at is None
    assert not AuditEvent.objects.filter(object_id=str(node.pk)).exists()
    assert asked.status_code == 200 and wrong.status_code == 400
    page = asked.content.decode()
    assert 'id="confirm-page"' in page and "gpu-h200-07" in page
    assert 'name="confirm"' in page and 'value="XID 79 twice"' in page  # the reason is kept
    assert "Type “gpu-h200-07” exactly" in wrong.content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        done = client.post(url, {"action": action, "reason": "XID 79 twice",
                                 "confirm": "gpu-h200-07"})
    assert done.status_code == 302
    node.refresh_from_db()
    assert node.state == target


def test_returning_a_node_without_critical_faults_and_cordoning_need_no_confirmation(
    login, platform_admin
):
    repaired = NodeFactory(state=NodeState.MAINTENANCE)
    healthy = NodeFactory(state=NodeState.AVAILABLE)
    client = login(platform_admin)

    for node, action in ((repaired, "return-to-service"), (healthy, "cordon")):
        response = client.post(reverse("inventory:node-action", args=[node.pk]),
                                {"action": action, "reason": "checked"})
        assert response.status_code == 302, action
    repaired.refresh_from_db()
    healthy.refresh_from_db()
    assert repaired.state == NodeState.AVAILABLE and healthy.state == NodeState.CORDONED


def test_a_node_action_without_an_explicit_action_changes_nothing(login, platform_admin):
    node = NodeFactory(state=NodeState.MAINTENANCE)
    _critical_fault(node)
    response = login(platform_admin).post(
        reverse("inventory:node-action", args=[node.pk]), {"reason": "pressed Enter"}, follow=True
    )
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE
    assert "Choose an action" in response.content.decode()
    assert HealthEvent.objects.filter(node=node, resolved_at__isnull=True).count() == 1


def test_revoking_a_token_asks_first_naming_it(login, tenant_member):
    issued = api_token_create(user=tenant_member, name="terraform")
    client = login(tenant_member)
    url = reverse("api-token-revoke", args=[issued.token.pk])

    asked = client.post(url)
    forged = client.post(url, {"confirm": "ci"})

    assert asked.status_code == 200 and "terraform" in asked.content.decode()
    assert 'id="confirm-page"' in asked.content.decode()
    assert forged.status_code == 400
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is None
    assert client.post(url, {"confirm": "terraform"}).status_code == 302
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None


def test_withdrawing_a_quota_request_asks_first_naming_it(login, tenant_member, submit):
    request = submit({"memory-gib": 1200})
    client = login(tenant_member)
    url = reverse("tenants:quota-request-withdraw", args=["acme", request.pk])

    asked = client.post(url)

    assert asked.status_code == 200
    page = asked.content.decode()
    assert f"Withdraw quota request #{request.pk}?" in page and "+1,200" in page
    assert QuotaRequest.objects.get(pk=request.pk).status == QuotaRequest.Status.SUBMITTED
    assert client.post(url, {"confirm": f"quota request #{request.pk}"}).status_code == 302
    assert QuotaRequest.objects.get(pk=request.pk).status == QuotaRequest.Status.WITHDRAWN


def test_removing_a_member_asks_first_naming_them(login, tenant_owner, tenant_member):
    membership = Membership.objects.get(user=tenant_member)
    client = login(tenant_owner)
    url = reverse("tenants:member-change", args=["acme", membership.pk])

    asked = client.post(url, {"remove": "1"})

    assert asked.status_code == 200 and "Remove member from Acme Labs?" in asked.content.decode()
    assert Membership.objects.filter(pk=membership.pk).exists()
    assert client.post(url, {"remove": "1", "confirm": "member"}).status_code == 302
    assert not Membership.objects.filter(pk=membership.pk).exists()
