"""Finance settles an invoice in headless Chromium: a credit note, a partial payment, a payment
over the balance due refused on the form, the rest paid; the list's totals, the roll-up and the
PDF say the same. Screenshots go to artifacts/screenshots/."""

import io
from decimal import Decimal

import pytest
from pypdf import PdfReader

from billing.models import Invoice, InvoiceStatus
from billing.services import invoicing, payments
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import screenshot, sign_in

from .finance_data import JAN, bill, tenant_with_cost_center

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _pay(page, amount: str, reference: str) -> None:
    if not page.locator("#pay-form").is_visible():
        page.click("#action-pay")
    page.fill("#pay-form [name=amount]", amount)
    page.fill("#pay-form [name=reference]", reference)
    with page.expect_navigation():
        page.click("#pay-submit")


def test_finance_credits_and_pays_an_invoice_in_parts(page, finance):
    tenant = tenant_with_cost_center("helix", "Helix Research", "CC-4100")
    invoice = invoicing.invoice_issue(invoice_id=bill(tenant, JAN, 40).pk, actor=finance)
    total = invoice.total  # 100.00 before tax
    sign_in(page, "finance", TEST_PASSWORD)
    page.goto(f"/billing/invoices/{invoice.pk}/")

    page.click("#action-credit")
    page.fill("#credit-form [name=amount]", "10.00")
    page.fill("#credit-form [name=reason]", "A day of outage")
    with page.expect_navigation():
        page.click("#credit-submit")
    page.locator("#settle-net", has_text=f"{total - 10:,.2f}").wait_for()

    _pay(page, "50.00", "SEPA-1")
    left = total - 60
    page.locator("#messages", has_text=f"{left:,.2f} is still due").wait_for()
    page.locator("#settle-balance", has_text=f"{left:,.2f}").wait_for()
    assert page.locator("#payments tr[data-payment]").count() == 1

    _pay(page, f"{left + 1:.2f}", "TOO-MUCH")  # over the balance due
    page.locator("#pay-form .invalid-feedback, #pay-form .text-danger",
                 has_text="never more than the balance due").first.wait_for()
    screenshot(page, "finance-invoice-overpayment-refused")
    assert Invoice.objects.get(pk=invoice.pk).amount_paid == Decimal("50.00")

    _pay(page, f"{left:.2f}", "SEPA-2")
    page.locator("#messages", has_text="it is paid").wait_for()
    page.locator("#invoice-title [data-status='paid'], #invoice-title .badge",
                 has_text="Paid").first.wait_for()
    assert page.locator("#payments tr[data-payment]").count() == 2
    screenshot(page, "finance-invoice-settled")
    assert Invoice.objects.get(pk=invoice.pk).status == InvoiceStatus.PAID

    with page.expect_download() as info:
        page.click("#download-pdf")
    text = " ".join(PdfReader(io.BytesIO(open(info.value.path(), "rb").read()))  # noqa: SIM115
                    .pages[0].extract_text().split())
    assert "SEPA-1" in text and "SEPA-2" in text and "Balance due" in text

    page.goto("/billing/invoices/")
    page.locator("#totals-balance", has_text="0.00").wait_for()
    assert f"{total - 10:,.2f}" in page.inner_text("#totals-net")
    screenshot(page, "finance-invoices-settlement-totals")
    page.goto("/billing/cost-centers/")
    row = page.locator("#rollup-table tr[data-cost-center='CC-4100']")
    assert row.locator("[data-col=credited]").inner_text() == "10.00"
    assert row.locator("[data-col=outstanding]").inner_text().strip() == "0.00"
    screenshot(page, "finance-cost-centers-settlement")


def test_a_tenant_sees_its_invoice_credited_paid_in_part_and_what_is_due(
    page, tenant, tenant_owner, finance
):
    invoice = invoicing.invoice_issue(invoice_id=bill(tenant, JAN, 40).pk, actor=finance)
    invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance, amount=Decimal("5.00"),
                                 reason="goodwill")
    payments.payment_record(invoice_id=invoice.pk, actor=finance, amount="25.00")
    sign_in(page, "owner", TEST_PASSWORD)

    page.goto("/billing/t/acme/")

    row = page.locator(f"#invoice-{invoice.pk}")
    assert row.locator("[data-col=credited]").inner_text() == "\u22125.00"
    assert row.locator("[data-col=paid]").inner_text() == "\u221225.00"
    assert row.locator("[data-col=balance]").inner_text() == (
        f"{invoice.currency} {invoice.total - 30:,.2f}")
    row.scroll_into_view_if_needed()
    screenshot(page, "tenant-spend-invoice-balance")
