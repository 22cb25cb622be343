"""Finance's filters pick, not type: the tenant (and, when too many for a select, the cost
center) is picked from options the server sends as the person types, whatever the number of
tenants; month inputs show the month filtered on; "Issue selected drafts" shows only when
there are drafts. The journey runs in headless Chromium; screenshots go to
artifacts/screenshots/."""

from datetime import date

import pytest

from billing.models import Invoice
from billing.services import invoicing
from tenants.models import Tenant
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import screenshot, sign_in

from .finance_data import FEB, JAN, bill, tenant_with_cost_center

DEC = date(2025, 12, 1)

OPTIONS = "/billing/filter-options/"


def _fleet(size: int) -> None:
    """`size` more tenants, as a large fleet has (no invoices: only the picker sees them)."""
    Tenant.objects.bulk_create(
        Tenant(slug=f"fleet-{n:04}", name=f"Fleet team {n:04}", cost_center=f"CC-{n:04}")
        for n in range(size)
    )


@pytest.mark.django_db
def test_the_tenant_options_match_name_or_slug_exact_slug_first_and_are_few(
    login, finance, django_assert_num_queries
):
    _fleet(2000)
    tenant_with_cost_center("nova", "Nova Robotics", "CC-4200")
    tenant_with_cost_center("supernova", "Bright Star", "CC-4201")
    client = login(finance)
    client.get("/billing/invoices/")  # the session's user, read once

    with django_assert_num_queries(4):  # the session, the user, their roles, the options
        body = client.get(f"{OPTIONS}tenant/?tenant=nova").content.decode()
    assert body.index('<option value="nova">Nova Robotics</option>') < body.index(
        '<option value="supernova">Bright Star</option>')
    assert body.count("<option") == 2
    by_name = client.get(f"{OPTIONS}tenant/?tenant=team 00").content.decode()
    assert '<option value="fleet-0012">Fleet team 0012</option>' in by_name
    assert by_name.count("<option") == 20  # of the 100 that match: a short list to pick from
    assert client.get(f"{OPTIONS}tenant/").content.decode().count("<option") == 20
    assert client.get(f"{OPTIONS}tenant/?tenant=%3Cb%3E").content.decode().strip() == ""
    centers = client.get(f"{OPTIONS}cost-center/?cost_center=cc-01").content.decode()
    assert '<option value="CC-0100"></option>' in centers and centers.count("<option") == 20
    assert client.get(f"{OPTIONS}projects/").status_code == 404


@pytest.mark.django_db
def test_only_finance_and_admins_see_the_options(login, tenant_owner, tenant):
    response = login(tenant_owner).get(f"{OPTIONS}tenant/?tenant=a")

    assert response.status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize(("raw", "shown"), [("2026-01", "2026-01"), ("2026-1", "2026-01"),
                                            ("January", "")])
def test_a_month_input_shows_the_month_filtered_on(login, finance, raw, shown):
    for page, name in (("/billing/invoices/", "period"), ("/billing/cost-centers/",
                                                          "period_from")):
        body = login(finance).get(f"{page}?{name}={raw}").content.decode()
        assert f'type="month" name="{name}" id="id_{name}" value="{shown}"' in body


@pytest.mark.django_db
def test_issue_selected_drafts_shows_only_when_there_are_drafts(login, finance):
    nova = tenant_with_cost_center("nova", "Nova Robotics", "CC-4200")
    invoicing.invoice_issue(invoice_id=bill(nova, JAN, 10).pk, actor=finance)
    bill(nova, FEB, 10)
    client = login(finance)

    with_drafts = client.get("/billing/invoices/").content.decode()
    issued_only = client.get("/billing/invoices/?status=issued").content.decode()

    assert 'id="bulk-issue"' in with_drafts and 'id="select-all-drafts"' in with_drafts
    assert 'id="bulk-issue"' not in issued_only and 'id="select-all-drafts"' not in issued_only
    assert 'id="invoice-rows"' in issued_only  # the issued invoice is listed


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_finance_picks_a_tenant_and_a_month_and_gets_their_invoices(page, finance):
    _fleet(2000)
    tenants = [tenant_with_cost_center("helix", "Helix Research", "CC-4100"),
               tenant_with_cost_center("nova", "Nova Robotics", "CC-4200")]
    for tenant in tenants:
        for month in (DEC, JAN):
            invoicing.invoice_issue(invoice_id=bill(tenant, month, 10).pk, actor=finance)
        bill(tenant, FEB, 10)
    sign_in(page, "finance", TEST_PASSWORD)
    page.goto("/billing/invoices/")
    page.locator("#invoice-count", has_text="6").wait_for()
    assert page.locator("#bulk-issue").is_visible()

    # Issued invoices only: no draft among them, so nothing to issue.
    page.select_option("#id_status", "issued")
    page.wait_for_url("**status=issued**")
    page.locator("#invoice-count", has_text="4").wait_for()
    assert page.locator("#bulk-issue").count() == 0

    # The tenant: typed in part, by name, and picked from what the server offers.
    page.click("#id_tenant")
    page.keyboard.type("Nova Rob")
    page.locator('#tenant-options option[value="nova"]').wait_for(state="attached")
    assert page.locator("#tenant-options option").count() == 1
    screenshot(page, "finance-invoices-tenant-picker")
    page.fill("#id_tenant", "nova")  # what picking the option puts in the box
    page.wait_for_url("**tenant=nova**")
    page.locator("#invoice-count", has_text="2").wait_for()

    # The month.
    page.fill("#id_period", "2026-01")
    page.wait_for_url("**period=2026-01**")
    page.locator("#invoice-count", has_text="1").wait_for()
    rows = page.locator("#invoice-rows tbody tr").all_inner_texts()
    january = Invoice.objects.get(tenant__slug="nova", period_start__year=2026,
                                  period_start__month=1)
    assert len(rows) == 1 and january.number in rows[0]
    screenshot(page, "finance-invoices-picked")

    # Opened again from its address, the month input shows the month it filters on.
    page.goto("/billing/invoices/?tenant=nova&period=2026-1&status=issued")
    assert page.input_value("#id_period") == "2026-01"
    assert page.input_value("#id_tenant") == "nova"
    page.locator("#invoice-count", has_text="1").wait_for()

    # The usage explorer's tenant is picked the same way.
    page.goto("/billing/usage/?start=2026-01-01&end=2026-01-31")
    page.click("#id_tenant")
    page.keyboard.type("helix")
    page.locator('#tenant-options option[value="helix"]').wait_for(state="attached")
    page.fill("#id_tenant", "helix")
    page.click("#apply-filters")
    page.wait_for_url("**tenant=helix**")
    page.locator("#tenant-name", has_text="Helix Research").wait_for()
    screenshot(page, "usage-explorer-tenant-picked")

    # The roll-up's months show as months, whatever way the address wrote them.
    page.goto("/billing/cost-centers/?period_from=2025-12&period_to=2026-1")
    assert page.input_value("#id_period_from") == "2025-12"
    assert page.input_value("#id_period_to") == "2026-01"
    screenshot(page, "cost-centers-months")
