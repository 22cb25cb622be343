"""An inference endpoint's API keys in a real browser, against the demo's simulated gateway: a
member creates a key and sees it once (in the examples too), the endpoint refuses a call without
it (401) and answers one with it (200), the key is revoked and refused again; the page never
shows the key after its first showing."""

from io import StringIO

import pytest
from django.core.management import call_command

from core.models import AuditEvent
from tenants.workloads.endpoint_keys import EndpointKey
from tests.support.axe import axe_violations, describe
from tests.support.fixtures_browser import fresh_page, screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_key_is_created_seen_once_used_and_revoked(browser, live_server, settings):
    settings.INFERENCE_DOMAIN = "endpoints.demo.internal"
    settings.PORTAL_URL = live_server.url
    call_command("load_demo", stdout=StringIO())
    with fresh_page(browser, live_server) as page:
        sign_in(page, "mike", "mike-member-demo")
        page.goto("/t/nova/workloads/")
        page.get_by_role("link", name="support-assistant").first.click()
        page.locator("#endpoint-keys").wait_for()
        assert "No key yet" in page.locator("#endpoint-keys").inner_text()

        page.fill("#key-name", "chat-app")
        page.click("#create-key")
        page.locator("#new-key").wait_for()
        raw = page.locator("#new-key-value").inner_text().strip()
        assert raw.startswith("afk_")
        # The examples carry the new key, this once.
        examples = page.locator("#connection").inner_text()
        assert f"Bearer {raw}" in examples and f'api_key="{raw}"' in examples
        screenshot(page, "endpoint-key-created")
        violations = axe_violations(page)
        assert not violations, describe(violations)

        base = page.locator("#connection dd code").nth(1).inner_text().strip()
        assert base.endswith("/v1") and "/simulated-gateway/" in base
        refused = page.request.get(f"{base}/models")
        assert refused.status == 401 and "authentication failed" in refused.text()
        answered = page.request.post(
            f"{base}/chat/completions", headers={"Authorization": f"Bearer {raw}"},
            data={"model": "support-assistant",
                  "messages": [{"role": "user", "content": "Say hello"}]})
        assert answered.status == 200, answered.text()
        assert "support-assistant" in answered.json()["choices"][0]["message"]["content"]

        page.goto(page.url)  # a reload: the endpoint's page, the key gone, its first characters
        assert page.url.endswith(f"/workloads/{EndpointKey.objects.get().workload_id}/")
        key = EndpointKey.objects.get()
        listed = page.locator(f"#key-{key.pk}").inner_text()
        assert raw not in page.content() and key.hint in listed and "active" in listed
        assert "$ENDPOINT_KEY" in page.locator("#connection").inner_text()
        screenshot(page, "endpoint-keys")

        page.click(f"#revoke-{key.pk}")
        page.locator("#confirm-page").wait_for()
        page.click("#confirm-submit")
        page.locator(f"#key-{key.pk}[data-key-state='revoked']").wait_for()
        assert page.request.get(
            f"{base}/models", headers={"Authorization": f"Bearer {raw}"}).status == 401
        screenshot(page, "endpoint-key-revoked")
    assert [e.action for e in AuditEvent.objects.filter(
        action__startswith="endpoint_key.").order_by("pk")] == [
        "endpoint_key.create", "endpoint_key.revoke"]
