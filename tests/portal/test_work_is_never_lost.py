"""A broker or mail server that is down delays work; it never loses it or answers 500.

Decisions' mail waits in the outbox until a mail server takes it; a page whose follow-up task
cannot be queued still saves and says so; the sweeps carry the work out once the broker is back.
"""

import threading

import pytest
from django.core import mail
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from core import outbox
from core.models import OutboxEmail
from inventory.models import NodeState
from inventory.services import lifecycle, sync
from tenants.models import QuotaRequest
from tenants.quota.services import quota_request_create
from tests.factories import NodeFactory
from tests.support.fixtures_celery import CLOSED_PORT_BROKER, celery_broker


@pytest.fixture
def submitted(tenant, tenant_member):
    return quota_request_create(
        tenant=tenant,
        requested_by=tenant_member,
        lines=[{"resource": "gpu:nvidia-h100-80gb", "amount": 2}],
        justification="A second replica.",
    )


@pytest.mark.django_db
def test_a_decision_mail_waits_in_the_outbox_while_the_broker_is_down(
    submitted, platform_admin, tenant_member, api_client, broker_down
):
    mail.outbox.clear()
    api_client.force_authenticate(platform_admin)

    response = api_client.post(
        f"/api/v1/quota-requests/{submitted.pk}/approve/", {"note": "ok"}, format="json"
    )

    assert response.status_code == 200, response.content
    assert QuotaRequest.objects.get(pk=submitted.pk).status == QuotaRequest.Status.APPROVED
    assert mail.outbox == []
    waiting = OutboxEmail.objects.get(topic="quota_request.approved")
    assert waiting.sent_at is None
    assert tenant_member.email in waiting.to
    assert f"#{submitted.pk}" in waiting.subject


@pytest.mark.django_db
def test_the_outbox_sweep_sends_what_waited_once_and_only_once(
    tenant, tenant_member, platform_admin
):
    with celery_broker(CLOSED_PORT_BROKER):
        request = quota_request_create(
            tenant=tenant,
            requested_by=tenant_member,
            lines=[{"resource": "cpu", "amount": 8}],
            justification="More vCPUs.",
        )
    waiting = OutboxEmail.objects.get(topic="quota_request.submitted")
    assert waiting.sent_at is None
    mail.outbox = []

    first, second = outbox.outbox_sweep(), outbox.outbox_sweep()

    assert (first, second) == (1, 0)
    assert [m.subject for m in mail.outbox] == [waiting.subject]
    assert f"#{request.pk}" in waiting.subject
    waiting.refresh_from_db()
    assert waiting.sent_at is not None


@pytest.mark.django_db
@override_settings(EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
                   EMAIL_HOST="127.0.0.1", EMAIL_PORT=1, EMAIL_TIMEOUT=2)
def test_a_refusing_mail_server_is_recorded_and_retried_later(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        email = outbox.email_enqueue(
            to=["olivia@example.com"], subject="Hello", body="Body", topic="test.mail"
        )
    # Eager: the send ran after commit and the mail server refused the connection.
    email.refresh_from_db()
    assert email.sent_at is None
    assert email.attempts == 1
    assert "Connection refused" in email.last_error or "Errno" in email.last_error
    assert email.next_attempt_at > timezone.now()
    assert outbox.outbox_sweep() == 0  # not due yet: it waits for its backoff

    OutboxEmail.objects.filter(pk=email.pk).update(next_attempt_at=timezone.now())
    with override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"):
        mail.outbox = []
        assert outbox.outbox_sweep() == 1
    email.refresh_from_db()
    assert email.sent_at is not None and email.attempts == 2 and email.last_error == ""
    assert [m.to for m in mail.outbox] == [["olivia@example.com"]]


@pytest.mark.django_db(transaction=True)
@override_settings(EMAIL_BACKEND="tests.support.mail.SlowBackend")
def test_two_workers_sending_one_mail_at_once_send_it_once():
    email = OutboxEmail.objects.create(to=["a@example.com"], subject="Once", body="", topic="t")
    mail.outbox = []
    results = []

    def send() -> None:
        try:
            results.append(outbox.outbox_send(email_id=email.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(results) == [False, True]
    assert len(mail.outbox) == 1


@pytest.mark.django_db(transaction=True)  # real commits: the follow-up is sent when they happen
def test_a_cordon_saves_and_says_why_while_the_broker_is_down(
    login, platform_admin, simulated_gateway, broker_down
):
    node = NodeFactory(state=NodeState.AVAILABLE)
    client = login(platform_admin)

    response = client.post(
        f"/fleet/nodes/{node.pk}/action/", {"action": "cordon", "reason": "fan noise"}, follow=True
    )

    node.refresh_from_db()
    assert response.status_code == 200
    assert node.state == NodeState.CORDONED
    assert "The task queue is unreachable" in response.content.decode()


@pytest.mark.django_db
def test_sync_now_says_the_queue_is_unreachable_instead_of_failing(
    login, platform_admin, broker_down
):
    response = login(platform_admin).post("/fleet/sync/", follow=True)

    assert response.status_code == 200
    assert "could not be queued: the task queue is unreachable" in response.content.decode()


@pytest.mark.django_db
def test_a_cordon_the_broker_missed_reaches_the_cluster_at_the_next_sync(
    platform_admin, simulated_gateway, django_capture_on_commit_callbacks
):
    node = NodeFactory(state=NodeState.AVAILABLE)
    simulated_gateway.apply(
        manifests=[{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.k8s_name}}]
    )
    with celery_broker(CLOSED_PORT_BROKER):  # the cordon commits, its task never leaves
        lifecycle.node_cordon(node_id=node.pk, actor=platform_admin, reason="fan noise")
    live = simulated_gateway.get(api_version="v1", kind="Node", name=node.k8s_name)
    assert not (live.get("spec") or {}).get("unschedulable")

    with django_capture_on_commit_callbacks(execute=True):
        # The periodic sweep: it finds the node schedulable, cordons it.
        sync.cluster_sync(cluster="main")

    live = simulated_gateway.get(api_version="v1", kind="Node", name=node.k8s_name)
    assert live["spec"]["unschedulable"] is True
