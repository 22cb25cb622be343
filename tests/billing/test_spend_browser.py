"""In headless Chromium: the price on a launch form follows the fields as they change, and the
spend page draws its chart with the budget and forecast. Screenshots land in
artifacts/screenshots/."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from billing.calculations.money import month_start
from billing.models import BillingAccount
from tests.factories import TEST_PASSWORD, GPUFactory, NodeFactory, QuotaFactory
from tests.support.fixtures_browser import screenshot, sign_in

from .spend_data import H100, rate, usage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(tenant, tenant_member):
    node = NodeFactory(reserved_for="")
    for index in range(8):
        GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    for resource, limit in {H100: 8, "cpu": 64, "memory-gib": 512, "count:inference": 3}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    rate(H100, "2.50")
    rate("cpu", "0.04")
    rate("memory-gib", "0.005")
    return tenant


def test_the_launch_price_follows_the_form_and_the_spend_page_draws_its_chart(acme, page):
    sign_in(page, "member", TEST_PASSWORD)
    page.goto("/t/acme/workloads/new/inference/")
    page.fill("#id_name", "chat")
    page.fill("#id_model_uri", "hf://meta-llama/Llama-3.1-8B-Instruct")
    page.select_option("#id_gpu", H100)
    page.fill("#id_max_replicas", "2")
    page.locator("#id_max_replicas").blur()
    # 2 replicas of 1 H100, 4 vCPUs and 32 GiB: 2 * (2.50 + 0.16 + 0.16)
    page.locator("#quote-total", has_text="EUR 5.64").wait_for()

    page.fill("#id_max_replicas", "3")
    page.locator("#id_max_replicas").blur()
    page.locator("#quote-total", has_text="EUR 8.46").wait_for()
    assert "6,091.20 per 30-day month" in page.locator("#price-quote").inner_text()
    screenshot(page, "spend-launch-price")

    page.goto("/t/acme/quota/requests/new/")
    page.select_option("#id_lines-0-resource", H100)
    page.fill("#id_lines-0-amount", "4")
    page.locator("#id_lines-0-amount").blur()
    page.locator("#quote-total", has_text="EUR 10.00").wait_for()
    screenshot(page, "spend-quota-price")

    page.goto("/billing/t/acme/")
    assert "No usage metered yet this month" in page.locator("#section-chart").inner_text()
    screenshot(page, "spend-page-empty")

    start = month_start(timezone.now())
    for hour in range(6):
        usage(acme, H100, start + timedelta(hours=hour), 4 * 3600)  # 10.00 an hour
    BillingAccount.objects.create(tenant=acme, monthly_budget=Decimal("70.00"))
    page.goto("/billing/t/acme/")
    assert page.locator("#spent").inner_text() == "EUR 60.00"
    assert page.locator("#budget").get_attribute("data-state") == "warning"
    page.wait_for_function(
        "() => { const c = document.getElementById('spend-chart'); return c && c.width > 0"
        " && window.Chart && Chart.getChart(c) !== undefined; }"
    )
    assert page.evaluate("Chart.getChart(document.getElementById('spend-chart'))"
                         ".data.datasets.map(d => d.label)") == [
        "Spent", "Forecast", "Budget (EUR 70.00)"
    ]
    screenshot(page, "spend-page")
    for width in (375, 320):  # a phone: nothing scrolls sideways (the table scrolls in its box)
        page.set_viewport_size({"width": width, "height": 800})
        page.wait_for_function("() => document.documentElement.scrollWidth"
                               " <= document.documentElement.clientWidth")
    screenshot(page, "spend-page-phone")
    page.set_viewport_size({"width": 1280, "height": 800})

    page.goto("/t/acme/")
    page.locator("#card-spent", has_text="EUR 60.00").wait_for()
    screenshot(page, "spend-dashboard-card")
