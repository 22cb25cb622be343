"""Webhook deliveries end to end: emitted in the event's transaction, sent by the Celery task
after commit to a real receiver on 127.0.0.1 that verifies the Standard Webhooks signature
itself; retries with capped backoff after a 500 or a refused connection; the row lock; a hook
that keeps failing is disabled and its owners told; the sweep; where a hook may not point."""

import time
from datetime import UTC, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.models import AuditEvent, OutboxEmail
from tenants.webhooks import services, transport
from tenants.webhooks.models import DeliveryStatus, Webhook, WebhookDelivery
from tenants.webhooks.services.delivery import webhook_deliveries_due
from tests.support.webhooks import hook_for, start_receiver, start_trickler

pytestmark = pytest.mark.django_db

DATA = {"workload": {"id": 7, "name": "chat", "kind": "Inference endpoint", "status": "ready"},
        "url": "http://127.0.0.1:8000/t/acme/workloads/7/"}


def _emit(tenant, capture, event_type="workload.ready"):
    with capture(execute=True):
        return services.webhook_event_emit(event_type=event_type, tenant=tenant, data=DATA)


def test_a_delivery_sent_by_the_task_after_commit_is_received_and_its_signature_verifies(
    tenant, tenant_owner, receiver, django_capture_on_commit_callbacks,
):
    hook, secret = services.webhook_create(
        actor=tenant_owner, tenant=tenant, name="CI", url=receiver.url,
        event_types=["workload.ready", "workload.failed"])
    assert secret.startswith("whsec_") and secret not in hook.sealed_secret
    receiver.secret = secret
    with django_capture_on_commit_callbacks(execute=False) as queued:
        [delivery] = services.webhook_event_emit(event_type="workload.ready", tenant=tenant,
                                                 data=DATA)
    assert receiver.received == []  # nothing leaves before the event's transaction commits
    assert len(queued) == 1
    queued[0]()  # the commit: the task runs (eagerly) and sends

    [got] = receiver.received
    assert got.error == "" and got.headers["webhook-id"] == delivery.event_id
    assert got.headers["content-type"] == "application/json"
    assert got.payload["type"] == "workload.ready"
    assert got.payload["data"]["workload"]["name"] == "chat"
    assert got.payload["data"]["tenant"] == {"slug": "acme", "name": "Acme Labs"}
    assert got.payload["timestamp"].endswith("Z")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == (
        DeliveryStatus.SUCCEEDED, 1, 200)
    assert delivery.delivered_at is not None and delivery.duration_ms is not None
    assert '"ok": true' in delivery.response_body
    hook.refresh_from_db()
    assert hook.last_success_at is not None and hook.consecutive_failures == 0


def test_only_enabled_hooks_hearing_the_event_get_it_and_admin_hooks_hear_every_tenant(
    tenant, other_tenant, receiver, django_capture_on_commit_callbacks,
):
    hook_for(tenant, url=receiver.url, events=["workload.ready"], name="mine")
    hook_for(tenant, url=receiver.url, events=["workload.failed"], name="deaf")
    hook_for(other_tenant, url=receiver.url, name="theirs")
    hook_for(None, url=receiver.url, name="admin")
    off = hook_for(tenant, url=receiver.url, name="off")
    Webhook.objects.filter(pk=off.pk).update(enabled=False)

    deliveries = _emit(tenant, django_capture_on_commit_callbacks)
    assert sorted(d.webhook.name for d in deliveries) == ["admin", "mine"]
    assert len({d.event_id for d in deliveries}) == 1  # one event, one webhook-id
    assert len(receiver.received) == 2 and all(r.payload for r in receiver.received)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.webhook_event_emit(event_type="budget.alert", tenant=other_tenant,
                                           data={}) != []


def test_a_slack_hook_gets_a_sentence_with_a_link_still_signed(
    tenant, receiver, django_capture_on_commit_callbacks,
):
    hook_for(tenant, url=receiver.url, format=Webhook.Format.SLACK)
    _emit(tenant, django_capture_on_commit_callbacks)
    [got] = receiver.received
    assert got.payload == {"text": "Inference endpoint *chat* of Acme Labs is ready. "
                                   "<http://127.0.0.1:8000/t/acme/workloads/7/|Open in the portal>"}


def test_a_500_is_retried_after_a_backoff_then_delivered_by_the_sweep(
    tenant, receiver, django_capture_on_commit_callbacks,
):
    receiver.answers = [500, 200]
    hook = hook_for(tenant, url=receiver.url)
    before = timezone.now()
    [delivery] = _emit(tenant, django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == (
        DeliveryStatus.PENDING, 1, 500)
    assert delivery.last_error == "The receiver answered HTTP 500."
    assert delivery.response_body == "receiver is down for maintenance"
    # 30 s after the first failure, spread by a quarter either way.
    assert before + timedelta(seconds=22) <= delivery.next_attempt_at
    assert delivery.next_attempt_at <= timezone.now() + timedelta(seconds=38)
    hook.refresh_from_db()
    assert hook.consecutive_failures == 1

    assert services.webhook_deliveries_sweep() == 0  # not due yet
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    assert services.webhook_deliveries_sweep() == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.SUCCEEDED, 2)
    assert [r.headers["webhook-id"] for r in receiver.received] == [delivery.event_id] * 2
    hook.refresh_from_db()
    assert hook.consecutive_failures == 0


@pytest.mark.parametrize(("status", "state"), [(200, DeliveryStatus.SUCCEEDED),
                                               (500, DeliveryStatus.PENDING)])
def test_a_nul_character_in_the_answer_is_kept_as_a_replacement_character(
    tenant, receiver, status, state, django_capture_on_commit_callbacks,
):
    """PostgreSQL's text holds no NUL: saving one failed, which rolled the attempt back and
    left the delivery due for ever."""
    receiver.answers, receiver.body = [status], b"ok\x00\x00done"
    hook_for(tenant, url=receiver.url)
    [delivery] = _emit(tenant, django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == (state, 1, status)
    assert delivery.response_body == "ok\ufffd\ufffddone"


def test_the_backoff_doubles_up_to_its_cap(settings):
    settings.WEBHOOK_RETRY_MAX_SECONDS = 3600
    for attempts, base in ((1, 30), (2, 60), (3, 120), (6, 960)):
        delay = services.retry_delay(attempts).total_seconds()
        assert base * 0.75 <= delay <= base * 1.25
    assert all(services.retry_delay(n).total_seconds() <= 3600 for n in (8, 20, 200))


def test_a_refused_connection_is_recorded_and_after_the_last_attempt_the_delivery_fails(
    tenant, settings, django_capture_on_commit_callbacks,
):
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    hook_for(tenant, url="http://127.0.0.1:1/hook")  # nothing listens on port 1
    [delivery] = _emit(tenant, django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING and delivery.response_code is None
    assert "refused" in delivery.last_error.lower()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    assert services.webhook_delivery_send(delivery_id=delivery.pk) == DeliveryStatus.FAILED
    assert services.webhook_delivery_send(delivery_id=delivery.pk) is None  # done with


def test_a_hook_that_keeps_failing_is_disabled_and_its_owners_are_told(
    tenant, tenant_owner, tenant_member, receiver, settings, login,
    django_capture_on_commit_callbacks,
):
    settings.WEBHOOK_DISABLE_AFTER_FAILURES = 3
    settings.WEBHOOK_DISABLE_AFTER_HOURS = 0  # the count alone decides here
    receiver.answers = [500]
    hook = hook_for(tenant, url=receiver.url)
    for _ in range(3):
        _emit(tenant, django_capture_on_commit_callbacks)
    hook.refresh_from_db()
    assert not hook.enabled and hook.disabled_at is not None
    since = hook.failing_since.astimezone(UTC)
    assert hook.disabled_reason.startswith(
        f"3 deliveries in a row failed since {since:%Y-%m-%d %H:%M} UTC; the last: The receiver")
    assert set(hook.deliveries.values_list("status", flat=True)) == {DeliveryStatus.FAILED}
    [mail] = OutboxEmail.objects.filter(topic="webhook.disabled")
    assert mail.to == ["owner@example.com"]
    assert mail.subject == "The webhook ci of Acme Labs was disabled"
    assert f"/t/acme/webhooks/{hook.pk}/" in mail.body
    disabled = AuditEvent.objects.get(action="webhook.disable")
    assert disabled.actor is None and disabled.changes["consecutive_failures"] == 3
    # Nothing more is sent to it.
    assert _emit(tenant, django_capture_on_commit_callbacks) == []
    assert len(receiver.received) == 3

    # Its page says why, and its owner enables it again.
    client = login(tenant_owner)
    page = client.get(f"/t/acme/webhooks/{hook.pk}/").content.decode()
    assert 'id="webhook-disabled"' in page and "3 deliveries in a row failed" in page
    client.post(f"/t/acme/webhooks/{hook.pk}/enable/")
    hook.refresh_from_db()
    assert hook.enabled and hook.consecutive_failures == 0 and hook.disabled_reason == ""
    assert hook.failing_since is None
    assert AuditEvent.objects.filter(action="webhook.enable", actor=tenant_owner).exists()


def test_a_short_outage_during_a_burst_does_not_disable_the_hook(
    tenant, receiver, settings, django_capture_on_commit_callbacks,
):
    """The count is reached within minutes, but the failures have not lasted: the hook stays.
    A delivered try ends the run; a run that lasts the whole time disables it."""
    settings.WEBHOOK_DISABLE_AFTER_FAILURES = 3
    settings.WEBHOOK_DISABLE_AFTER_HOURS = 24
    receiver.answers = [500]
    hook = hook_for(tenant, url=receiver.url)
    before = timezone.now()
    for _ in range(5):
        _emit(tenant, django_capture_on_commit_callbacks)
    hook.refresh_from_db()
    assert hook.enabled and hook.consecutive_failures == 5
    assert before <= hook.failing_since <= timezone.now()
    assert set(hook.deliveries.values_list("status", flat=True)) == {DeliveryStatus.PENDING}

    receiver.answers = [200]  # the receiver is back: the run ends
    _emit(tenant, django_capture_on_commit_callbacks)
    hook.refresh_from_db()
    assert (hook.consecutive_failures, hook.failing_since) == (0, None)

    receiver.answers = [500]  # down again, for good this time
    for _ in range(3):
        _emit(tenant, django_capture_on_commit_callbacks)
    hook.refresh_from_db()
    assert hook.enabled and hook.consecutive_failures == 3
    Webhook.objects.filter(pk=hook.pk).update(
        failing_since=timezone.now() - timedelta(hours=24, minutes=1))  # a day later
    _emit(tenant, django_capture_on_commit_callbacks)
    hook.refresh_from_db()
    assert not hook.enabled and hook.disabled_reason.startswith("4 deliveries in a row failed")
    assert AuditEvent.objects.get(action="webhook.disable").changes["consecutive_failures"] == 4


def test_the_sender_claims_a_delivery_with_a_row_lock_that_skips_one_already_claimed(
    tenant, receiver,
):
    """Two workers never send one delivery at once: the second skips the locked row."""
    hook = hook_for(tenant, url=receiver.url)
    delivery = WebhookDelivery.objects.create(webhook=hook, tenant=tenant, event_id="msg_1",
                                              event_type="workload.ready", payload={"a": 1})
    with CaptureQueriesContext(connection) as queries:
        assert services.webhook_delivery_send(delivery_id=delivery.pk) == DeliveryStatus.SUCCEEDED
    [claim] = [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"]]
    assert 'FROM "tenants_webhookdelivery"' in claim and claim.endswith("SKIP LOCKED")
    assert services.webhook_delivery_send(delivery_id=delivery.pk) is None  # sent already
    assert len(receiver.received) == 1


@pytest.mark.parametrize(("url", "words"), [
    ("http://hooks.example.com/x", "must start with https://"),
    ("https://10.1.2.3/x", "not a public address"),
    ("https://169.254.169.254/latest/meta-data", "not a public address"),
    ("https://[::1]/x", "not a public address"),
    ("https://localhost/x", "not this machine"),
    ("https://user:pw@hooks.example.com/x", "no user name or password"),
    ("hooks.example.com", "full URL"),
    ("https://[x]/hook", "not a valid name or address"),
    ("https://[::1/hook", "not a valid name or address"),
    ("https://::1]/hook", "not a valid name or address"),
    # IPv6 addresses that lead to a private IPv4 one: NAT64, 6to4, IPv4-mapped, -compatible.
    ("https://[64:ff9b::a9fe:a9fe]/x", "leads to 169.254.169.254"),
    ("https://[64:ff9b::10.1.2.3]/x", "leads to 10.1.2.3"),
    ("https://[64:ff9b:1::a00:1]/x", "not a public address"),
    ("https://[2002:7f00:1::1]/x", "leads to 127.0.0.1"),
    ("https://[2002:c0a8:10a::]/x", "leads to 192.168.1.10"),
    ("https://[::ffff:10.1.2.3]/x", "not a public address"),
    ("https://[::10.1.2.3]/x", "not a public address"),
])
def test_a_url_that_is_not_public_https_is_refused(url, words, settings):
    settings.WEBHOOK_ALLOW_INSECURE_LOCALHOST = False
    with pytest.raises(transport.UnsafeUrl, match=words):
        transport.url_check(url, allow_localhost=False)


@pytest.mark.parametrize("url", [
    "https://hooks.example.com/x", "https://[2606:4700::1111]/x", "https://8.8.8.8/x",
    "https://[64:ff9b::8.8.8.8]/x", "https://[2002:808:808::1]/x",
])
def test_a_public_address_and_nat64_or_6to4_to_a_public_one_are_accepted(url):
    transport.url_check(url, allow_localhost=False)


def test_a_name_is_resolved_and_each_address_it_has_must_be_public():
    with pytest.raises(transport.UnsafeUrl, match="not a public address"):
        transport.resolve("localhost", 443, allow_localhost=False)
    assert transport.resolve("localhost", 443, allow_localhost=True) in {"127.0.0.1", "::1"}
    answer = transport.post("https://no-such-host.invalid/x", body=b"{}", headers={},
                            timeout=2, allow_localhost=False)
    assert answer.status is None and answer.error.startswith("Not sent: ")


def test_a_redirect_is_not_followed(receiver):
    receiver.answers = [302]
    answer = transport.post(receiver.url, body=b"{}", headers={}, timeout=2,
                            allow_localhost=True)
    assert answer.status == 302 and not answer.ok and len(receiver.received) == 1


@pytest.mark.parametrize("part", ["headers", "body"])
def test_a_receiver_answering_a_byte_at_a_time_times_out_at_the_deadline(part):
    """Each byte comes well within the timeout, but the answer as a whole does not."""
    url, stop = start_trickler(part=part, every=0.2, lasting=3.0)
    try:
        started = time.monotonic()
        answer = transport.post(url, body=b"{}", headers={}, timeout=1, allow_localhost=True)
        took = time.monotonic() - started
    finally:
        stop()
    assert answer.status is None and not answer.ok
    assert answer.error == ("Timed out: no complete answer within 1 s (connecting, sending and "
                            "reading together).")
    assert 1 <= took < 2 and 1000 <= answer.duration_ms < 2000


def test_a_delivery_to_a_trickling_receiver_is_a_failed_attempt(
    tenant, settings, django_capture_on_commit_callbacks,
):
    settings.WEBHOOK_TIMEOUT_SECONDS = 1
    url, stop = start_trickler(part="headers", every=0.2, lasting=3.0)
    try:
        hook = hook_for(tenant, url=url)
        [delivery] = _emit(tenant, django_capture_on_commit_callbacks)
    finally:
        stop()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == (
        DeliveryStatus.PENDING, 1, None)
    assert delivery.last_error.startswith("Timed out: no complete answer within 1 s")
    hook.refresh_from_db()
    assert hook.consecutive_failures == 1


def test_the_host_header_of_an_ipv6_address_keeps_its_brackets():
    receiver, stop = start_receiver(host="::1")
    try:
        answer = transport.post(receiver.url, body=b"{}", headers={}, timeout=2,
                                allow_localhost=True)
    finally:
        stop()
    port = receiver.url.split("]:")[1].split("/")[0]
    assert answer.ok and receiver.received[0].headers["host"] == f"[::1]:{port}"


def test_a_broker_that_is_down_loses_no_delivery(
    tenant, receiver, broker_down, django_capture_on_commit_callbacks,
):
    hook_for(tenant, url=receiver.url)
    [delivery] = _emit(tenant, django_capture_on_commit_callbacks)  # the send cannot be queued
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.PENDING, 0)
    assert receiver.received == []
    # The event is kept: the sweep finds it due and its task (run here as a worker would) sends.
    assert webhook_deliveries_due() == [delivery.pk]
    assert services.webhook_delivery_send(delivery_id=delivery.pk) == DeliveryStatus.SUCCEEDED
    assert len(receiver.received) == 1
