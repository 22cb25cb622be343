"""Issue 29, items 4 and 5 from finance's side: a month with hours never metered shows them on
the invoice page and is not issued (unless finance gives a reason, kept in the audit trail);
the hourly sweep task, run for real on the real clock, meters every hour of the open billing
period (weeks back, not only the last 48 hours), after which the month issues. Every issue
asks first, naming the tenant, the number to be and the total, and acts only on that."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from billing import tasks
from billing.calculations.money import floor_hour
from billing.models import Invoice, InvoiceStatus, MeteringWindow, UsageRecord
from billing.services import invoicing
from core.models import AuditEvent
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import screenshot, sign_in

from .finance_data import H100, rates

pytestmark = pytest.mark.django_db

LIST = "/billing/invoices/"
API = "/api/v1/billing/invoices/"


@pytest.fixture
def last_month():
    """The first instant of the month before today's (UTC), and of today's."""
    this_month = floor_hour(timezone.now()).replace(day=1, hour=0)
    return (this_month - timedelta(days=1)).replace(day=1), this_month


@pytest.fixture
def november(settings, tenant, last_month):
    """Last month metered by the sweep task, then three hours of its 10th lost (the beat was
    down: no window at all) and 6 GPU-hours billed on its 2nd; the tenant's draft."""
    settings.PROMETHEUS_URL = ""  # measured metering off: the allocated windows bill
    settings.METERING_START = None
    start, end = last_month
    # Called, not queued: the sweep runs here as the worker would run it, whatever task an
    # earlier test in this process left on Celery's stack (which makes .get() refuse).
    assert tasks.usage_meter_sweep_task() >= (end - start) / timedelta(hours=1)
    lost = [start + timedelta(days=9, hours=3 + n) for n in range(3)]
    MeteringWindow.objects.filter(source="allocated", hour__in=lost).delete()
    rates()
    UsageRecord.objects.create(tenant=tenant, source="allocated", resource=H100,
                               hour=start + timedelta(days=1, hours=8), unit_seconds=6 * 3600)
    draft = invoicing.invoice_compute(tenant=tenant, month=start.date())
    assert draft.total == Decimal("15.00")
    return draft, lost


def _messages(response) -> list[str]:
    return [str(m) for m in response.wsgi_request._messages]


def test_the_invoice_page_shows_the_hours_never_metered(login, finance, november):
    draft, lost = november

    page = login(finance).get(f"{LIST}{draft.pk}/").content.decode()

    notice = page.split('id="unmetered-warning"')[1].split("</div>")[0]
    assert "never metered" in notice and "issuing is refused without a reason" in notice
    assert f"{lost[0]:%Y-%m-%d %H}:00 to {lost[-1]:%Y-%m-%d %H}:59 UTC" in notice
    assert "(3 hours)" in notice
    assert 'name="unmetered_reason"' in page  # the override, on the issue form


def test_issuing_over_unmetered_hours_is_refused_until_the_sweep_fills_them(
    login, finance, november
):
    draft, lost = november
    client = login(finance)

    refused = client.post(f"{LIST}{draft.pk}/issue/", follow=True)

    assert Invoice.objects.get(pk=draft.pk).status == InvoiceStatus.DRAFT
    text = " ".join(_messages(refused))
    assert "3 hour(s) that were never metered" in text
    assert f"{lost[0]:%Y-%m-%d %H}:00" in text
    # Weeks ago, far behind the 48-hour look-back: the next hourly run meters them anyway.
    assert timezone.now() - lost[0] > timedelta(hours=48)
    assert tasks.usage_meter_sweep_task.delay().get() == 3
    page = client.get(f"{LIST}{draft.pk}/").content.decode()
    assert 'id="unmetered-warning"' not in page

    asked = client.post(f"{LIST}{draft.pk}/issue/")
    assert asked.status_code == 200 and Invoice.objects.get(pk=draft.pk).is_draft
    issued = client.post(f"{LIST}{draft.pk}/issue/", {"confirm": asked.context["name"]})

    assert issued.status_code == 302
    assert Invoice.objects.get(pk=draft.pk).status == InvoiceStatus.ISSUED


def test_finance_may_issue_over_unmetered_hours_with_a_reason_kept_in_the_trail(
    login, finance, november
):
    draft, lost = november
    client = login(finance)
    reason = "Cluster migration: those hours are billed by the old system."

    asked = client.post(f"{LIST}{draft.pk}/issue/", {"unmetered_reason": reason})

    body = asked.content.decode()
    assert asked.status_code == 200 and "3 hour(s)" in body and reason in body
    assert 'name="unmetered_reason"' in body  # carried into the confirmed POST
    client.post(f"{LIST}{draft.pk}/issue/",
                {"unmetered_reason": reason, "confirm": asked.context["name"]})

    invoice = Invoice.objects.get(pk=draft.pk)
    assert invoice.status == InvoiceStatus.ISSUED
    event = AuditEvent.objects.get(action="invoice.issue", object_id=str(draft.pk))
    override = event.changes["unmetered_override"]
    assert override["reason"] == reason and override["hours"] == 3
    assert override["spans"] == [[lost[0].isoformat(), (lost[-1] + timedelta(hours=1)).isoformat()]]
    page = client.get(f"{LIST}{draft.pk}/").content.decode()
    assert 'id="unmetered-warning"' in page  # the issued invoice still shows its gap


def test_the_api_refuses_unmetered_hours_without_a_reason_and_a_total_not_reviewed(
    as_user, finance, november
):
    draft, _ = november
    client = as_user(finance)

    refused = client.post(f"{API}{draft.pk}/issue/", {}, format="json")
    stale = client.post(f"{API}{draft.pk}/issue/",
                        {"unmetered_reason": "migration", "expected_total": "14.00"},
                        format="json")
    too_long = client.post(f"{API}{draft.pk}/issue/", {"unmetered_reason": "x" * 501},
                           format="json")

    assert refused.status_code == 400 and "never metered" in refused.json()["error"]["message"]
    assert stale.status_code == 400 and "not the 14.00 EUR confirmed" in stale.json()[
        "error"]["message"]
    assert too_long.status_code == 400 and "unmetered_reason" in too_long.json()["error"]["fields"]
    assert Invoice.objects.get(pk=draft.pk).status == InvoiceStatus.DRAFT

    issued = client.post(f"{API}{draft.pk}/issue/",
                         {"unmetered_reason": "migration", "expected_total": "15.00"},
                         format="json")
    assert issued.status_code == 200 and issued.json()["status"] == "issued"


# --- the confirmation ---------------------------------------------------------------------------


@pytest.fixture
def metered_draft(settings, tenant, last_month):
    settings.PROMETHEUS_URL = ""
    start, _ = last_month
    tasks.usage_meter_sweep_task.delay().get()
    rates()
    UsageRecord.objects.create(tenant=tenant, source="allocated", resource=H100,
                               hour=start + timedelta(hours=5), unit_seconds=4 * 3600)
    return invoicing.invoice_compute(tenant=tenant, month=start.date())


def test_issuing_asks_first_naming_tenant_number_and_total(login, finance, tenant,
                                                           metered_draft):
    client = login(finance)
    year = timezone.localdate().year
    trail = AuditEvent.objects.count()

    asked = client.post(f"{LIST}{metered_draft.pk}/issue/")

    body = asked.content.decode()
    assert asked.status_code == 200
    title = body.split("<h1")[1].split("</h1>")[0]
    assert f"Issue INV-{year}-0001 to {tenant.name} for 10.00 EUR?" in title
    assert "cannot be undone" in body and f"Issue INV-{year}-0001" in body
    assert Invoice.objects.get(pk=metered_draft.pk).is_draft  # nothing happened yet
    assert AuditEvent.objects.count() == trail

    # A forged or stale confirmation (another total) is asked again, not acted on.
    forged = client.post(f"{LIST}{metered_draft.pk}/issue/",
                         {"confirm": f"INV-{year}-0001 9.00"})
    assert forged.status_code == 400 and "confirm again" in forged.content.decode()
    assert Invoice.objects.get(pk=metered_draft.pk).is_draft

    done = client.post(f"{LIST}{metered_draft.pk}/issue/", {"confirm": asked.context["name"]})

    assert done.status_code == 302
    invoice = Invoice.objects.get(pk=metered_draft.pk)
    assert invoice.number == f"INV-{year}-0001" and invoice.total == Decimal("10.00")


def test_a_total_that_changed_after_the_confirmation_is_not_issued(login, finance, tenant,
                                                                   metered_draft, last_month):
    client = login(finance)
    asked = client.post(f"{LIST}{metered_draft.pk}/issue/")
    # More usage lands before the click: the recomputed total is no longer the one confirmed.
    UsageRecord.objects.create(tenant=tenant, source="allocated", resource=H100,
                               hour=last_month[0] + timedelta(hours=6), unit_seconds=3600)

    response = client.post(f"{LIST}{metered_draft.pk}/issue/",
                           {"confirm": asked.context["name"]}, follow=True)

    assert Invoice.objects.get(pk=metered_draft.pk).status == InvoiceStatus.DRAFT
    assert any("not the 10.00 EUR confirmed" in m for m in _messages(response))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_finance_sees_the_gap_and_issues_over_it_with_a_reason_in_the_browser(
    page, finance, november
):
    draft, lost = november
    sign_in(page, "finance", TEST_PASSWORD)

    page.goto(f"{LIST}{draft.pk}/")
    gap = page.locator("#unmetered-warning")
    gap.wait_for()
    assert f"{lost[0]:%Y-%m-%d %H}:00 to {lost[-1]:%Y-%m-%d %H}:59 UTC" in gap.inner_text()
    screenshot(page, "finance-invoice-unmetered-hours")
    page.fill("#id_unmetered_reason", "Billed by the old cluster's meter for those hours.")
    with page.expect_navigation():
        page.click("#action-issue")

    heading = page.locator("#confirm-page h1").inner_text()
    assert f"to {draft.tenant_name} for 15.00 EUR?" in heading and "INV-" in heading
    assert "3 hour(s)" in page.locator("#confirm-consequences").inner_text()
    screenshot(page, "finance-invoice-issue-confirm")
    assert Invoice.objects.get(pk=draft.pk).is_draft
    with page.expect_navigation():
        page.click("#confirm-submit")

    page.locator("#invoice-title", has_text="INV-").wait_for()
    assert Invoice.objects.get(pk=draft.pk).status == InvoiceStatus.ISSUED
