"""In headless Chromium: Launch turns off while the form asks for more than the quota (and
links to a prefilled quota request), on again when it fits; every connect command of a ready
workload has a copy button that puts the command, exactly, on the clipboard."""

import pytest

from tenants.workloads import services
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import screenshot, sign_in

from .conftest import H100, INFERENCE_SPEC, ready_inference_service

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_context_options() -> dict:
    return {"viewport": {"width": 1280, "height": 900}, "locale": "en-US", "timezone_id": "UTC",
            "permissions": ["clipboard-read", "clipboard-write"]}


@pytest.fixture
def acme(tenant, tenant_member, gpu_pool, workload_quota):
    workload_quota()
    return tenant


def test_launch_is_off_over_quota_and_links_to_a_prefilled_request(acme, page, live_server):
    sign_in(page, "member", TEST_PASSWORD)
    page.goto("/t/acme/workloads/new/inference/")
    page.fill("#id_name", "chat")
    page.fill("#id_model_uri", "hf://meta-llama/Llama-3.1-8B-Instruct")
    page.select_option("#id_gpu", H100)
    page.fill("#id_max_replicas", "9")
    page.locator("#id_max_replicas").blur()
    page.locator("#over-quota").wait_for()
    assert page.locator("#launch-submit").is_disabled()
    screenshot(page, "workload-launch-over-quota")

    page.fill("#id_max_replicas", "2")
    page.locator("#id_max_replicas").blur()
    page.locator("#over-quota").wait_for(state="detached")
    assert page.locator("#launch-submit").is_enabled()

    page.fill("#id_max_replicas", "6")
    page.locator("#id_max_replicas").blur()
    page.locator("#over-quota").wait_for()
    with page.expect_navigation():
        page.click("#request-more-quota")
    assert page.locator("#id_lines-0-resource").input_value() == H100
    assert page.locator("#id_lines-0-amount").input_value() == "2"  # 6 asked, 4 left
    page.locator(f'#preview tr[data-resource="{H100}"]').wait_for()
    screenshot(page, "quota-request-prefilled")


def test_every_connect_command_has_a_copy_button(acme, tenant_member, page, live_server,
                                                 kube_gateway, kube_emulator):
    workload = services.workload_launch(tenant=acme, actor=tenant_member, kind="inference",
                                        name="chat", spec={**INFERENCE_SPEC, "max_replicas": 1})
    services.workload_reconcile(workload_id=workload.pk)
    ready_inference_service(kube_emulator, name="chat", namespace=acme.namespace)
    services.workload_observe(workload_id=workload.pk)

    sign_in(page, "member", TEST_PASSWORD)
    page.goto(f"/t/acme/workloads/{workload.pk}/")
    commands = page.locator("#connection pre")
    buttons = page.locator("#connection button[data-copy]")
    assert commands.count() >= 1 and buttons.count() == commands.count()
    for index in range(commands.count()):
        page.evaluate("navigator.clipboard.writeText('')")
        buttons.nth(index).click()
        page.wait_for_function(
            "i => document.querySelectorAll('#connection button[data-copy]')[i]"
            ".dataset.copied === 'true'", arg=index)
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied and copied == commands.nth(index).inner_text().strip()
        assert "Copied" in buttons.nth(index).inner_text()
    assert any("curl" in commands.nth(i).inner_text() for i in range(commands.count()))
    screenshot(page, "workload-connect-copy")
