"""A notebook in a real browser, against the demo's simulated fleet and gateway: a member opens
their running notebook signed in with their portal identity, cannot launch a second one on
the same home volume while it runs, stops it (its URL then answers 503), launches another
from the form, watches it come up live and opens it; a viewer of the tenant and someone
signed out are kept out by the gateway's sign-in policy."""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from tenants.models import Workload
from tests.support.axe import axe_violations, describe
from tests.support.fixtures_browser import fresh_page, screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Long enough for a page that polls every 3 s to look a few times and see the pod start.
LIVE_MS = 30_000


def _clean(page: Page, name: str) -> None:
    violations = axe_violations(page)
    assert not violations, f"{name}:\n{describe(violations)}"


def _open(page: Page) -> Page:
    """Click the page's Open button (a new tab, as people get it) and return that tab."""
    with page.context.expect_page() as opened:
        page.click("#notebook-open")
    tab = opened.value
    tab.wait_for_load_state()
    return tab


def _workload_page(page: Page, tenant: str, name: str) -> None:
    page.goto(f"/t/{tenant}/workloads/")
    page.get_by_role("link", name=name, exact=True).first.click()
    page.locator("#notebook").wait_for()


@pytest.fixture
def demo(settings, live_server):
    settings.NOTEBOOK_DOMAIN = "notebooks.demo.internal"
    settings.PORTAL_URL = live_server.url
    settings.FLEET_SIMULATED_READY_SECONDS = 1
    call_command("load_demo", stdout=StringIO())


def test_a_member_opens_stops_and_launches_a_notebook_signed_in(browser, live_server, demo):
    with fresh_page(browser, live_server) as page:
        sign_in(page, "mike", "mike-member-demo")
        _workload_page(page, "nova", "mike-lab")
        assert page.locator("#notebook").get_attribute("data-running") == "true"
        assert "JupyterLab" in page.locator("#notebook-interface").inner_text()
        assert page.locator("#notebook-home").inner_text().startswith("home-mike")
        url = page.locator("#notebook-open").get_attribute("href")
        assert "/simulated-gateway/" in url and "notebooks.demo.internal" in url
        screenshot(page, "notebook-running")
        _clean(page, "a running notebook's page")

        lab = _open(page)
        assert lab.url.startswith(url)  # signed in already: no detour through a sign-in page
        text = lab.locator("body").inner_text()
        assert "mike-lab" in text and "/home/jovyan" in text
        assert "token" not in lab.url
        screenshot(lab, "notebook-opened")
        lab.close()

        # A second notebook would mount the same single-node home volume: refused, named.
        page.goto("/t/nova/workloads/new/notebook/")
        page.fill("#id_name", "lab-two")
        page.select_option("#id_image", "scipy")
        with page.expect_navigation():
            page.click("#launch-submit")
        refusal = page.locator(".alert-danger, .invalid-feedback").first.inner_text()
        assert "Your home volume is mounted by notebook mike-lab" in refusal
        assert not Workload.objects.filter(name="lab-two").exists()

        # Stop it: the page says the home volume is kept, and its URL has nothing behind it.
        _workload_page(page, "nova", "mike-lab")
        page.locator("#power").get_by_role("button", name="Stop").click()
        page.locator("#confirm-page").wait_for()
        assert "home volume" in page.locator("#confirm-page").inner_text()
        if page.locator("#id_confirm").count():
            page.fill("#id_confirm", "mike-lab")
        page.click("#confirm-submit")
        expect(page.locator("#notebook")).to_have_attribute("data-running", "false",
                                                            timeout=LIVE_MS)
        expect(page.locator("#notebook-open")).to_have_count(0, timeout=LIVE_MS)
        expect(page.locator("#workload-status")).to_contain_text("Stopped", timeout=LIVE_MS)
        screenshot(page, "notebook-stopped")
        gone = page.request.get(url)
        assert gone.status == 503 and "no healthy upstream" in gone.text()

        # Now a new one from the form: it comes up on its page without a reload, then opens.
        page.goto("/t/nova/workloads/new/notebook/")
        page.fill("#id_name", "lab-two")
        page.select_option("#id_image", "scipy")
        screenshot(page, "notebook-launch-form")
        _clean(page, "the notebook launch form")
        with page.expect_navigation(url=re.compile(r"/workloads/\d+/$")):
            page.click("#launch-submit")
        page.locator("#notebook-open").wait_for(timeout=LIVE_MS)
        lab = _open(page)
        assert "lab-two" in lab.locator("body").inner_text()
        lab.close()
        url = page.locator("#notebook-open").get_attribute("href")

    # A viewer of Nova is refused by the gateway's authorization; someone signed out is sent
    # to sign in first, and back.
    with fresh_page(browser, live_server) as page:
        refused = page.request.get(url, max_redirects=0)
        assert refused.status == 302 and "/accounts/login/" in refused.headers["location"]
        sign_in(page, "olivia", "olivia-owner-demo")
        denied = page.request.get(url)
        assert denied.status == 403 and "RBAC: access denied" in denied.text()
