"""The webhook pages and API: owners manage their tenant's hooks, platform admins every hook
and the hooks for every tenant; another tenant's hook is a 404 everywhere, a member's attempt a
403; the secret is shown once (and revealed on request, audited); the test button and
redelivery; the delivery log's filters and its bounded queries."""

import threading

import pytest
from django.db import connection, transaction
from django.utils import timezone

from core.models import AuditEvent
from tenants.webhooks.models import DeliveryStatus, Webhook, WebhookDelivery
from tests.support.webhooks import hook_for

pytestmark = pytest.mark.django_db

BASE = "/api/v1/webhooks/"


def _deliveries(hook, count: int, status=DeliveryStatus.FAILED):
    first = hook.deliveries.count()
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(webhook=hook, tenant=hook.tenant, event_id=f"msg_{hook.pk}_{first + n}",
                        event_type="workload.failed", payload={}, status=status, attempts=10,
                        response_code=500, last_error="The receiver answered HTTP 500.")
        for n in range(count))


def test_an_owner_registers_a_hook_over_the_api_and_sees_its_secret_once(
    tenant, tenant_owner, api_client, receiver,
):
    api_client.force_login(tenant_owner)
    created = api_client.post(BASE, {"tenant": "acme", "name": "CI", "url": receiver.url,
                                     "event_types": ["workload.ready"]}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["secret"].startswith("whsec_") and body["tenant"] == "acme"
    assert body["format"] == "standard" and body["enabled"] is True
    hook_id = body["id"]
    read = api_client.get(f"{BASE}{hook_id}/").json()
    assert "secret" not in read and read["event_types"] == ["workload.ready"]
    assert body["secret"] not in api_client.get(BASE).content.decode()

    changed = api_client.put(f"{BASE}{hook_id}/", {"name": "CI", "url": receiver.url,
                                                   "event_types": ["invoice.issued"],
                                                   "format": "slack"}, format="json")
    assert changed.status_code == 200 and changed.json()["format"] == "slack"
    assert AuditEvent.objects.get(action="webhook.update").changes["format"] == {
        "from": "standard", "to": "slack"}
    assert api_client.delete(f"{BASE}{hook_id}/").status_code == 204
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="webhook.")
            .order_by("pk")] == ["webhook.create", "webhook.update", "webhook.delete"]


@pytest.mark.parametrize(("body", "field"), [
    ({"url": "http://hooks.example.com/x"}, "url"),
    ({"url": "https://192.168.1.10/x"}, "url"),
    ({"url": "https://[x]/"}, "url"),
    ({"url": "https://[::1/"}, "url"),
    ({"event_types": []}, "event_types"),
    ({"event_types": ["webhook.test"]}, "event_types"),
    ({"event_types": "workload.ready"}, "event_types"),
    ({"format": "xml"}, "format"),
    ({"name": ""}, "name"),
])
def test_bad_input_is_a_field_error(tenant, tenant_owner, api_client, body, field):
    api_client.force_login(tenant_owner)
    answer = api_client.post(BASE, {"tenant": "acme", "name": "CI",
                                    "url": "https://hooks.example.com/x",
                                    "event_types": ["workload.ready"], **body}, format="json")
    assert answer.status_code == 400
    assert field in answer.json()["error"]["fields"]
    assert not Webhook.objects.exists()


def test_another_tenants_hook_is_a_404_and_a_member_may_not_manage_hooks(
    tenant, other_tenant, tenant_owner, tenant_member, other_tenant_member, api_client,
):
    theirs = hook_for(other_tenant, url="https://hooks.example.com/globex")
    mine = hook_for(tenant, url="https://hooks.example.com/acme")
    api_client.force_login(tenant_owner)
    assert [h["id"] for h in api_client.get(BASE).json()["results"]] == [mine.pk]
    for answer in (api_client.get(f"{BASE}{theirs.pk}/"),
                   api_client.get(f"{BASE}{theirs.pk}/deliveries/"),
                   api_client.post(f"{BASE}{theirs.pk}/test/"),
                   api_client.put(f"{BASE}{theirs.pk}/", {"name": "x"}, format="json"),
                   api_client.delete(f"{BASE}{theirs.pk}/")):
        assert answer.status_code == 404
    assert api_client.post(BASE, {"tenant": "globex", "name": "x", "url": "https://a.example/",
                                  "event_types": ["budget.alert"]},
                           format="json").status_code == 404
    assert api_client.post(BASE, {"tenant": None, "name": "x", "url": "https://a.example/",
                                  "event_types": ["budget.alert"]},
                           format="json").status_code == 403
    api_client.force_login(tenant_member)
    assert api_client.get(BASE).json()["results"] == []
    assert api_client.get(f"{BASE}{mine.pk}/").status_code == 404
    assert api_client.post(BASE, {"tenant": "acme", "name": "x", "url": "https://a.example/",
                                  "event_types": ["budget.alert"]},
                           format="json").status_code == 403
    assert Webhook.objects.count() == 2
    assert Webhook.objects.get(pk=theirs.pk).name == "ci"


def test_a_platform_admin_registers_a_hook_for_every_tenant(platform_admin, api_client):
    api_client.force_login(platform_admin)
    created = api_client.post(BASE, {"tenant": None, "name": "NOC", "url": "https://a.example/",
                                     "event_types": ["workload.failed"]}, format="json")
    assert created.status_code == 201 and created.json()["tenant"] is None


def test_the_test_event_and_the_delivery_log_over_the_api(
    tenant, tenant_owner, api_client, receiver, django_capture_on_commit_callbacks,
    django_assert_max_num_queries,
):
    hook = hook_for(tenant, url=receiver.url)
    api_client.force_login(tenant_owner)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client.post(f"{BASE}{hook.pk}/test/")
    assert answer.status_code == 202 and answer.json()["event_type"] == "webhook.test"
    [got] = receiver.received
    assert got.payload["type"] == "webhook.test"
    assert got.payload["data"]["webhook"] == {"id": hook.pk, "name": "ci"}
    for count in (2, 12):
        _deliveries(hook, count)
        with django_assert_max_num_queries(8):
            log = api_client.get(f"{BASE}{hook.pk}/deliveries/?status=failed")
        assert log.status_code == 200 and all(d["status"] == "failed"
                                               for d in log.json()["results"])
    delivered = api_client.get(f"{BASE}{hook.pk}/deliveries/?status=succeeded").json()
    assert [d["event_type"] for d in delivered["results"]] == ["webhook.test"]
    assert api_client.get(f"{BASE}{hook.pk}/deliveries/?status=nope").status_code == 400


def test_the_owner_registers_a_hook_on_the_page_and_sees_the_secret_once(
    tenant, tenant_owner, login, receiver,
):
    client = login(tenant_owner)
    page = client.get("/t/acme/webhooks/").content.decode()
    assert 'id="webhooks-empty"' in page and 'id="tab-webhooks"' in page
    answer = client.post("/t/acme/webhooks/", {
        "name": "CI", "url": receiver.url, "event_types": ["workload.ready", "budget.alert"],
        "format": "standard"})
    assert answer.status_code == 200 and answer["Cache-Control"].startswith("no-store")
    hook = Webhook.objects.get()
    shown = answer.content.decode()
    assert 'id="webhook-secret-value"' in shown
    assert client.get(f"/t/acme/webhooks/{hook.pk}/").content.decode().count("whsec_") == 0
    revealed = client.post(f"/t/acme/webhooks/{hook.pk}/secret/").content.decode()
    assert 'id="webhook-secret-value"' in revealed
    assert AuditEvent.objects.filter(action="webhook.secret_reveal", actor=tenant_owner).exists()

    refused = client.post("/t/acme/webhooks/", {"name": "x", "url": "https://10.0.0.1/",
                                                "event_types": ["budget.alert"],
                                                "format": "standard"})
    assert refused.status_code == 200 and "not a public address" in refused.content.decode()
    malformed = client.post("/t/acme/webhooks/", {"name": "x", "url": "https://[::1/",
                                                  "event_types": ["budget.alert"],
                                                  "format": "standard"})
    assert malformed.status_code == 200
    assert "not a valid name or address" in malformed.content.decode()
    assert Webhook.objects.count() == 1


def test_test_button_and_redelivery_on_the_page(
    tenant, tenant_owner, login, receiver, django_capture_on_commit_callbacks,
):
    hook = hook_for(tenant, url=receiver.url)
    client = login(tenant_owner)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/t/acme/webhooks/{hook.pk}/test/")
    assert [r.payload["type"] for r in receiver.received] == ["webhook.test"]
    _deliveries(hook, 1)
    failed = hook.deliveries.get(status=DeliveryStatus.FAILED)
    page = client.get(f"/t/acme/webhooks/{hook.pk}/").content.decode()
    assert f'id="redeliver-{failed.pk}"' in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/t/acme/webhooks/{hook.pk}/deliveries/{failed.pk}/redeliver/")
    failed.refresh_from_db()
    assert failed.status == DeliveryStatus.SUCCEEDED and failed.attempts == 1
    assert receiver.received[-1].headers["webhook-id"] == failed.event_id
    assert AuditEvent.objects.filter(action="webhook.redeliver").count() == 1
    # Filtered by state, as htmx asks for the log alone.
    log = client.get(f"/t/acme/webhooks/{hook.pk}/?status=succeeded",
                     headers={"HX-Request": "true"}).content.decode()
    assert log.strip().startswith('<div class="card" id="delivery-log"')
    assert log.count('data-status="succeeded"') == 2 and 'data-status="failed"' not in log


@pytest.mark.django_db(transaction=True)
def test_redelivery_neither_waits_for_a_delivery_being_sent_nor_for_its_hook(
    tenant, tenant_owner, login,
):
    """A worker sending a delivery holds its row (and may lock its hook's row to count the
    failure): redelivering it answers at once that it is being sent; redelivering another
    delivery of a hook whose row is held goes through without waiting."""
    hook = hook_for(tenant, url="https://hooks.example.com/x")
    _deliveries(hook, 2)
    sending, other = hook.deliveries.order_by("pk")
    client, page = login(tenant_owner), f"/t/acme/webhooks/{hook.pk}/"
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '2s'")  # a wait fails the request here
    held, release = threading.Event(), threading.Event()

    def worker(model, pk):
        try:
            with transaction.atomic():
                model.objects.select_for_update().get(pk=pk)
                held.set()
                release.wait(10)
        finally:
            connection.close()

    for model, pk, target, says in (
        (WebhookDelivery, sending.pk, sending, "That delivery is being sent right now"),
        (Webhook, hook.pk, other, "is sent again"),
    ):
        held.clear(), release.clear()
        thread = threading.Thread(target=worker, args=(model, pk))
        thread.start()
        try:
            assert held.wait(10)
            answer = client.post(f"{page}deliveries/{target.pk}/redeliver/", follow=True,
                                 headers={"referer": f"http://testserver{page}"})
        finally:
            release.set()
            thread.join()
        assert answer.status_code == 200 and says in answer.content.decode()
    sending.refresh_from_db(), other.refresh_from_db()
    assert (sending.status, other.status) == (DeliveryStatus.FAILED, DeliveryStatus.PENDING)
    assert AuditEvent.objects.filter(action="webhook.redeliver").count() == 1


def test_disable_then_delete_on_the_page(tenant, tenant_owner, login):
    hook = hook_for(tenant, url="https://hooks.example.com/x")
    client = login(tenant_owner)
    client.post(f"/t/acme/webhooks/{hook.pk}/disable/")
    hook.refresh_from_db()
    assert not hook.enabled and hook.disabled_reason == "Disabled by owner."
    assert client.post(f"/t/acme/webhooks/{hook.pk}/test/").status_code in (302, 400)
    client.post(f"/t/acme/webhooks/{hook.pk}/delete/", {"confirm": "ci"})
    assert not Webhook.objects.exists()
    assert AuditEvent.objects.filter(action="webhook.delete").count() == 1


def test_the_pages_are_scoped(tenant, other_tenant, tenant_owner, tenant_member, login,
                              platform_admin):
    theirs = hook_for(other_tenant, url="https://hooks.example.com/globex")
    mine = hook_for(tenant, url="https://hooks.example.com/acme")
    client = login(tenant_owner)
    assert client.get(f"/t/acme/webhooks/{theirs.pk}/").status_code == 404
    assert client.get(f"/t/globex/webhooks/{theirs.pk}/").status_code == 404
    assert client.post(f"/t/acme/webhooks/{theirs.pk}/delete/",
                       {"confirm": "ci"}).status_code == 404
    assert client.get("/webhooks/").status_code == 403
    client = login(tenant_member)
    assert client.get("/t/acme/webhooks/").status_code == 403
    assert client.get(f"/t/acme/webhooks/{mine.pk}/").status_code == 403
    assert 'id="tab-webhooks"' not in client.get("/t/acme/").content.decode()
    assert Webhook.objects.count() == 2
    admin = login(platform_admin).get("/webhooks/").content.decode()
    assert f'id="webhook-{theirs.pk}"' in admin and f'id="webhook-{mine.pk}"' in admin


def test_the_pages_read_a_fixed_number_of_queries(
    tenant, tenant_owner, login, django_assert_max_num_queries,
):
    client = login(tenant_owner)
    for count in (1, 5):
        hooks = [hook_for(tenant, url="https://hooks.example.com/x", name=f"h{count}-{n}")
                 for n in range(count)]
        _deliveries(hooks[0], count * 10)
        WebhookDelivery.objects.filter(webhook=hooks[0]).update(created_at=timezone.now())
        with django_assert_max_num_queries(14):
            assert client.get("/t/acme/webhooks/").status_code == 200
        with django_assert_max_num_queries(14):
            assert client.get(f"/t/acme/webhooks/{hooks[0].pk}/").status_code == 200
