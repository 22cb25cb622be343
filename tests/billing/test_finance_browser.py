"""Finance's journey in headless Chromium: sign in, filter the invoices, issue two drafts in
bulk, open one, download it as CSV, XLSX and PDF. Screenshots go to artifacts/screenshots/."""

import csv
import io

import openpyxl
import pytest
from pypdf import PdfReader

from billing.models import Invoice, InvoiceStatus, UsageRecord
from billing.services import invoicing
from inventory.models import HealthEvent, Severity
from tests.factories import TEST_PASSWORD, NodeFactory
from tests.support.fixtures_browser import screenshot, sign_in

from .finance_data import FEB, H100, JAN, bill, tenant_with_cost_center, utc

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _books(finance) -> dict[str, Invoice]:
    tenants = [
        tenant_with_cost_center("helix", "Helix Research", "CC-4100"),
        tenant_with_cost_center("nova", "Nova Robotics", "CC-4200"),
        tenant_with_cost_center("orbit", "Orbit Vision", "CC-4100"),
    ]
    books = {}
    for i, tenant in enumerate(tenants):
        january = bill(tenant, JAN, 40 + 25 * i)
        books[f"{tenant.slug}-jan"] = invoicing.invoice_issue(invoice_id=january.pk,
                                                              actor=finance)
        books[f"{tenant.slug}-feb"] = bill(tenant, FEB, 30 + 17 * i)
    invoicing.invoice_mark_paid(invoice_id=books["helix-jan"].pk, actor=finance,
                                reference="SEPA-0042")
    # Orbit's February: a downtime credit (a GPU fell off the bus on gpu-a) and H200 time no
    # rate prices yet.
    orbit = tenants[2]
    HealthEvent.objects.create(
        node=NodeFactory(hostname="gpu-a"), kind=HealthEvent.Kind.XID, subject="gpu:3",
        severity=Severity.CRITICAL, detail="XID 79: GPU has fallen off the bus",
        opened_at=utc(2026, 2, 1, 2), resolved_at=utc(2026, 2, 1, 4),
    )
    for hour in (2, 3):
        UsageRecord.objects.create(tenant=orbit, source=UsageRecord.Source.MEASURED,
                                   resource=H100, hostname="gpu-a", hour=utc(2026, 2, 1, hour),
                                   unit_seconds=8 * 3600, busy_seconds=4 * 3600)
    UsageRecord.objects.create(tenant=orbit, source=UsageRecord.Source.ALLOCATED,
                               resource="gpu:nvidia-h200", hour=utc(2026, 2, 9, 9),
                               unit_seconds=4 * 3600)
    books["orbit-feb"] = invoicing.invoice_compute(tenant=orbit, month=FEB)
    return books


def _download(page, selector: str):
    with page.expect_download() as info:
        page.click(selector)
    download = info.value
    with open(download.path(), "rb") as file:
        return download.suggested_filename, file.read()


def test_finance_filters_issues_in_bulk_and_downloads_an_invoice(page, finance):
    books = _books(finance)
    sign_in(page, "finance", TEST_PASSWORD)

    page.goto("/billing/invoices/")
    page.locator("#invoice-count", has_text="6").wait_for()
    screenshot(page, "finance-invoices")

    # Filter: February's drafts (htmx swaps the table and the address follows).
    page.fill("#id_period", "2026-02")
    page.select_option("#id_status", "draft")
    page.wait_for_url("**status=draft**")
    page.locator("#invoice-count", has_text="3").wait_for()
    assert page.locator("tr[data-invoice]").count() == 3
    assert "period=2026-02" in page.url

    # Issue two of them in one go.
    page.check(f"#select-{books['helix-feb'].pk}")
    page.check(f"#select-{books['nova-feb'].pk}")
    page.locator("#selected-count", has_text="2 selected").wait_for()
    screenshot(page, "finance-invoices-selected")
    with page.expect_navigation():
        page.click("#bulk-issue")
    # Asked first: each draft's number to be, tenant and total; it cannot be undone.
    asked = page.locator("#confirm-consequences")
    asked.locator("li", has_text="Helix Research").wait_for()
    assert "Nova Robotics" in asked.inner_text() and "cannot be undone" in asked.inner_text()
    assert "Issue 2 invoices for" in page.locator("#confirm-page h1").inner_text()
    screenshot(page, "finance-invoices-issue-confirm")
    with page.expect_navigation():
        page.click("#confirm-submit")
    page.locator("#messages", has_text="Issued 2 invoice(s)").wait_for()
    assert "status=draft" in page.url  # back on the filtered list
    assert page.locator("tr[data-invoice]").count() == 1
    issued = Invoice.objects.filter(pk__in=[books["helix-feb"].pk, books["nova-feb"].pk])
    assert {invoice.status for invoice in issued} == {InvoiceStatus.ISSUED}
    screenshot(page, "finance-invoices-issued")

    # Open one of them.
    page.goto("/billing/invoices/?status=issued&period=2026-02")
    nova = Invoice.objects.get(pk=books["nova-feb"].pk)
    page.click(f"tr[data-invoice='{nova.pk}'] a")
    page.locator("#invoice-title", has_text=nova.number).wait_for()
    assert page.locator("#invoice-lines tr[data-line='usage']").count() == 1
    screenshot(page, "finance-invoice-detail")

    name, body = _download(page, "#download-csv")
    assert name == f"{nova.number}.csv"
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(r["invoice_number"], r["tenant_slug"], r["cost_center"]) for r in rows] == [
        (nova.number, "nova", "CC-4200")]
    assert rows[0]["invoice_total"] == f"{nova.total:f}"

    name, body = _download(page, "#download-xlsx")
    assert name == f"{nova.number}.xlsx"
    summary = openpyxl.load_workbook(io.BytesIO(body))["Summary"]
    assert summary["A2"].value == nova.number and summary["N2"].data_type == "n"
    assert summary["G2"].is_date

    name, body = _download(page, "#download-pdf")
    assert name == f"{nova.number}.pdf"
    text = PdfReader(io.BytesIO(body)).pages[0].extract_text()
    assert nova.number in text and "Nova Robotics" in text

    # A draft with a downtime credit and usage no rate prices: it says so, and is not issued.
    page.goto(f"/billing/invoices/{books['orbit-feb'].pk}/")
    page.locator("#unpriced-warning", has_text="gpu:nvidia-h200").wait_for()
    assert page.locator("tr[data-line='credit'] .credit-events", has_text="gpu-a").count() == 1
    screenshot(page, "finance-invoice-draft-with-credit")
    page.goto(f"/billing/invoices/{nova.pk}/")

    # The payment form, then the roll-up by cost center.
    page.click("#action-pay")
    page.locator("#pay-form").wait_for()
    screenshot(page, "finance-invoice-pay-form")
    page.goto("/billing/cost-centers/")
    page.locator("#cost-center-chart").wait_for()
    page.wait_for_function("() => window.Chart && Object.keys(Chart.instances).length > 0")
    screenshot(page, "finance-cost-centers")
    assert page.locator("#rollup-table tr[data-cost-center]").count() == 4

    # On a phone, no finance page scrolls sideways (wide tables scroll in their own box).
    page.set_viewport_size({"width": 320, "height": 700})
    for path in ("/billing/invoices/", f"/billing/invoices/{books['orbit-feb'].pk}/",
                 "/billing/cost-centers/"):
        page.goto(path)
        page.wait_for_function(
            "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth",
            timeout=3_000,
        )
    screenshot(page, "finance-cost-centers-phone")


def test_finance_exports_a_long_list_in_the_background_and_downloads_it(page, finance, settings):
    _books(finance)
    settings.INVOICE_EXPORT_INLINE_MAX = {"csv": 1000, "xlsx": 2}  # six invoices: too many
    sign_in(page, "finance", TEST_PASSWORD)
    page.goto("/billing/invoices/")

    # The XLSX of six invoices is asked for, not downloaded; the CSV still downloads at once.
    assert page.get_attribute("#export-xlsx", "data-background") == "true"
    assert page.get_attribute("#export-csv", "download") is not None
    with page.expect_navigation():
        page.click("#export-xlsx")

    assert page.url.split("?")[0].endswith("/billing/invoices/exports/")
    row = page.locator("tr[data-status]").first
    assert row.get_attribute("data-status") == "ready"  # tasks run eagerly here
    assert "is being written" in page.inner_text(".alert")
    screenshot(page, "finance-exports")
    name, body = _download(page, "a[id^=download-]")

    assert name.startswith("invoices-") and name.endswith(".xlsx")
    workbook = openpyxl.load_workbook(io.BytesIO(body))
    assert workbook.sheetnames == ["Invoices", "Lines"]
    assert workbook["Invoices"].max_row == 7  # the header and six invoices
