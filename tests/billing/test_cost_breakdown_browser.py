"""In headless Chromium: the spend page's cost breakdown draws its chart and switches grouping;
the usage explorer shows it for one tenant and the invoice list offers the FOCUS export.
Screenshots land in artifacts/screenshots/."""

from datetime import date

import pytest

from billing.services import invoicing
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import screenshot, sign_in, sign_out

from .cost_data import cost_month, cost_rates, people

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_cost_breakdown_draws_its_chart_and_switches_grouping(tenant, tenant_member,
                                                                  finance, page):
    cost_rates()
    ada, bob = people()
    cost_month(tenant, ada=ada, bob=bob, copies=2)
    invoice = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))
    sign_in(page, "member", TEST_PASSWORD)

    page.goto("/billing/t/acme/?month=2026-01#cost-breakdown")
    card = page.locator("#cost-breakdown")
    assert f"{invoice.total:,.2f}" in card.locator("#breakdown-total").inner_text()
    # Chart.js drew the bars: the canvas holds pixels of the bars' colour.
    page.wait_for_function("""() => {
        const canvas = document.getElementById('cost-breakdown-chart');
        return canvas && Chart.getChart(canvas) !== undefined;
    }""")
    card.locator("a[data-by=label]").click()
    page.locator("#breakdown-table", has_text="support-bot").wait_for()
    assert page.locator("#cost-breakdown a[data-by=label].active").count() == 1
    card.scroll_into_view_if_needed()
    screenshot(page, "cost-breakdown-by-label")

    sign_out(page)
    sign_in(page, "finance", TEST_PASSWORD)
    page.goto("/billing/usage/?start=2026-01-01&end=2026-01-31&tenant=acme&by=person")
    page.locator("#cost-breakdown", has_text="Ada L").wait_for()
    screenshot(page, "cost-breakdown-explorer")
    page.goto("/billing/invoices/")
    page.locator("#export-focus").wait_for()
    screenshot(page, "invoices-focus-button", full_page=False)
