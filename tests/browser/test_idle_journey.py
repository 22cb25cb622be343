"""A tenant's idle GPUs in a real browser: the dashboard names the idling endpoint, its page
says what it costs and when the policy acts, and a member keeps it running with a reason."""

from io import StringIO

import pytest
from django.core.management import call_command

from core.models import AuditEvent
from tests.support.axe import axe_violations, describe
from tests.support.fixtures_browser import fresh_page, screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_idle_warning_is_seen_followed_and_answered(browser, live_server):
    call_command("load_demo", stdout=StringIO())
    with fresh_page(browser, live_server) as page:
        sign_in(page, "mike", "mike-member-demo")

        notice = page.locator("#section-idle")
        assert "1 workload with idle GPUs" in notice.inner_text()
        notice.get_by_role("link", name="support-assistant").click()
        page.locator("#idle-notice").wait_for()
        text = page.locator("#idle-notice").inner_text()
        assert "1 idle GPU" in text and "0.80% utilization" in text and "EUR" in text
        assert "gives them back" in page.locator("#idle-deadline").inner_text()
        screenshot(page, "idle-warning")
        violations = axe_violations(page)
        assert not violations, describe(violations)

        page.fill("#keep-running-reason", "Launch demo for a customer on Friday")
        page.click("#keep-running")
        page.locator("#kept-running").wait_for()
        assert "the idle policy leaves it be" in page.locator("#idle-notice").inner_text()

        page.click("#tab-idle")
        page.locator("#idle-now").wait_for()
        assert "Kept running" in page.locator("#idle-now").inner_text()
        screenshot(page, "idle-gpus")
        violations = axe_violations(page)
        assert not violations, describe(violations)
    audit = AuditEvent.objects.get(action="workload.keep_running")
    assert audit.actor.username == "mike"
    assert audit.changes["after"] == "Launch demo for a customer on Friday"
