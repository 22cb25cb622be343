"""Payments and credit notes from finance's side: a payment records an amount, a date and a
reference; a partial one leaves a balance due; one over the balance due is refused; a paid
invoice's PDF names its payment; an invoice with credit notes is not voided; a credit note after
a payment shows as an over-settlement (a refund owed) on the invoice and in the roll-up."""

import io
import re
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.contrib.messages import get_messages
from django.utils import timezone
from pypdf import PdfReader

from billing.models import Invoice, InvoiceStatus, Payment
from billing.services import invoicing, payments
from core.models import AuditEvent
from tests.billing.finance_data import JAN, bill

API = "/api/v1/billing/invoices/"


@pytest.fixture
def issued(tenant, finance) -> Invoice:
    """Acme's January, issued: 40 H100 GPU-hours at 2.50 (100.00 before tax)."""
    draft = bill(tenant, JAN, 40)
    return invoicing.invoice_issue(invoice_id=draft.pk, actor=finance)


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def _pdf_text(response) -> str:
    """The PDF's text, its whitespace (wrapped cells) made single spaces."""
    pages = PdfReader(io.BytesIO(response.content)).pages
    return " ".join(" ".join(page.extract_text() for page in pages).split())


def _shown(page: str, element_id: str) -> str:
    return re.sub(r"\s+", " ", re.search(rf'id="{element_id}"[^>]*>(.*?)</dd>', page,
                                         re.S).group(1))


def test_a_partial_payment_leaves_a_balance_due_and_the_second_settles_it(
    login, finance, issued
):
    client = login(finance)
    total = issued.total
    first = total - Decimal("30.00")

    response = client.post(f"/billing/invoices/{issued.pk}/pay/", {
        "amount": str(first), "paid_on": (timezone.localdate() - timedelta(days=2)).isoformat(),
        "reference": "SEPA-1"})

    assert response.status_code == 302
    assert _messages(response) == [
        f"Payment of {issued.currency} {first:,.2f} recorded on {issued.number}: "
        f"{issued.currency} 30.00 is still due."]
    issued.refresh_from_db()
    assert issued.status == InvoiceStatus.ISSUED and issued.balance_due == Decimal("30.00")
    page = client.get(f"/billing/invoices/{issued.pk}/").content.decode()
    assert "30.00" in _shown(page, "settle-balance")
    assert f"{first:,.2f}" in _shown(page, "settle-paid")
    assert 'data-payment="' in page and "SEPA-1" in page
    assert 'id="action-pay"' in page  # the rest may still be paid

    client.post(f"/billing/invoices/{issued.pk}/pay/", {"amount": "30.00", "reference": "SEPA-2"})

    issued.refresh_from_db()
    assert issued.status == InvoiceStatus.PAID and issued.balance_due == 0
    assert issued.payment_reference == "SEPA-2"
    recorded = list(Payment.objects.filter(invoice=issued).values_list("amount", "reference"))
    assert recorded == [(first, "SEPA-1"), (Decimal("30.00"), "SEPA-2")]
    assert AuditEvent.objects.filter(action="invoice.pay", object_id=str(issued.pk)).count() == 2

    pdf = _pdf_text(client.get(f"/billing/invoices/{issued.pk}/invoice.pdf"))
    paid_on = timezone.localdate() - timedelta(days=2)
    assert f"Payment {paid_on:%Y-%m-%d}, SEPA-1" in pdf
    assert f"Payment {timezone.localdate():%Y-%m-%d}, SEPA-2" in pdf
    assert f"Balance due {issued.currency} 0.00" in pdf


def test_a_pdf_downloaded_before_a_payment_is_not_served_after_it(login, finance, issued):
    client = login(finance)
    before = _pdf_text(client.get(f"/billing/invoices/{issued.pk}/invoice.pdf"))

    payments.payment_record(invoice_id=issued.pk, actor=finance, amount="10.00",
                            reference="PART")

    after = _pdf_text(client.get(f"/billing/invoices/{issued.pk}/invoice.pdf"))
    assert "Balance due" not in before and "PART" not in before
    assert "PART" in after and f"{issued.total - 10:,.2f}" in after


def test_a_payment_over_the_balance_due_is_refused_on_the_form(login, finance, issued):
    payments.payment_record(invoice_id=issued.pk, actor=finance, amount="50.00")
    over = issued.total - Decimal("50.00") + Decimal("0.01")

    response = login(finance).post(f"/billing/invoices/{issued.pk}/pay/",
                                   {"amount": str(over), "reference": "TOO-MUCH"})

    assert response.status_code == 400
    errors = response.context["payment_form"].errors["amount"]
    assert errors == [
        f"Only {issued.currency} {issued.total - 50:,.2f} is due on {issued.number} (total "
        f"{issued.total:,.2f}, credited 0.00, paid 50.00): a payment is never more than the "
        "balance due."]
    assert 'id="pay-panel" open' in response.content.decode().replace("\n", " ") or (
        "open" in re.search(r'<details[^>]*id="pay-panel"', response.content.decode()).group(0))
    assert Payment.objects.filter(invoice=issued).count() == 1


@pytest.mark.parametrize(("posted", "field"), [
    ({"amount": "0"}, "amount"), ({"amount": "-5"}, "amount"), ({"amount": "abc"}, "amount"),
    ({"amount": "1.005"}, "amount"), ({"amount": "1", "paid_on": "2999-01-01"}, "paid_on"),
    ({"amount": "1", "reference": "x" * 101}, "reference"),
])
def test_bad_payment_input_is_a_field_error_never_a_500(login, finance, issued, posted, field):
    response = login(finance).post(f"/billing/invoices/{issued.pk}/pay/", posted)

    assert response.status_code == 400
    assert field in response.context["payment_form"].errors
    assert not Payment.objects.exists()


def test_credit_notes_and_payments_together_settle_an_invoice(finance, issued):
    invoicing.credit_note_create(invoice_id=issued.pk, actor=finance, amount=Decimal("20.00"),
                                 reason="a day of outage")
    payments.payment_record(invoice_id=issued.pk, actor=finance,
                            amount=issued.total - Decimal("20.00"), reference="REST")

    issued.refresh_from_db()
    assert issued.status == InvoiceStatus.PAID
    assert (issued.amount_credited, issued.balance_due) == (Decimal("20.00"), Decimal("0.00"))


def test_mark_paid_records_one_payment_of_what_is_left(finance, issued):
    invoicing.credit_note_create(invoice_id=issued.pk, actor=finance, amount=Decimal("20.00"),
                                 reason="a day of outage")

    invoicing.invoice_mark_paid(invoice_id=issued.pk, actor=finance, reference="ALL")

    payment = Payment.objects.get(invoice=issued)
    assert (payment.amount, payment.reference, payment.date) == (
        issued.total - Decimal("20.00"), "ALL", timezone.localdate())
    issued.refresh_from_db()
    assert issued.status == InvoiceStatus.PAID and issued.balance_due == 0


def test_a_credit_after_payment_shows_as_over_settled_on_the_page_and_in_the_rollup(
    login, finance, issued
):
    invoicing.invoice_mark_paid(invoice_id=issued.pk, actor=finance, reference="ALL")
    invoicing.credit_note_create(invoice_id=issued.pk, actor=finance, amount=Decimal("12.00"),
                                 reason="an outage found later")
    client = login(finance)

    page = client.get(f"/billing/invoices/{issued.pk}/").content.decode()
    rollup = client.get("/billing/cost-centers/")

    assert "-12.00" in _shown(page, "settle-balance")
    assert "Over-settled: EUR 12.00 to refund" in page.replace(issued.currency, "EUR")
    row = rollup.context["rows"][0]
    assert (row.credited, row.paid, row.outstanding, row.over_settled) == (
        Decimal("12.00"), issued.total, Decimal("-12.00"), Decimal("12.00"))
    assert "Over-settled by 12.00: refund owed" in rollup.content.decode()


def test_an_invoice_with_credit_notes_is_not_voided_and_says_why(login, finance, issued):
    note = invoicing.credit_note_create(invoice_id=issued.pk, actor=finance,
                                        amount=Decimal("5.00"), reason="goodwill")

    response = login(finance).post(f"/billing/invoices/{issued.pk}/void/",
                                   {"reason": "billed twice"}, follow=True)

    issued.refresh_from_db()
    assert issued.status == InvoiceStatus.ISSUED and not issued.void_reason
    shown = " ".join(_messages(response)) or response.content.decode()
    assert f"{issued.number} has credit notes ({note.number})" in shown
    assert "Issue a credit note for what is left" in shown


def test_an_invoice_paid_in_part_is_not_voided(finance, issued):
    payments.payment_record(invoice_id=issued.pk, actor=finance, amount="1.00")

    with pytest.raises(Exception, match="has payments recorded"):
        invoicing.invoice_void(invoice_id=issued.pk, actor=finance, reason="wrong")

    assert Invoice.objects.get(pk=issued.pk).status == InvoiceStatus.ISSUED


def test_the_api_records_a_partial_payment_and_refuses_more_than_is_due(as_user, finance, issued):
    client = as_user(finance)

    partial = client.post(f"{API}{issued.pk}/pay/",
                          {"amount": "10.00", "paid_on": "2026-02-03", "reference": "API-1"},
                          format="json")
    over = client.post(f"{API}{issued.pk}/pay/", {"amount": str(issued.total)}, format="json")
    credited = client.post(f"{API}{issued.pk}/credit-notes/",
                           {"amount": "1.00", "reason": "x"}, format="json")
    void = client.post(f"{API}{issued.pk}/void/", {"reason": "wrong"}, format="json")

    assert partial.status_code == 200, partial.content
    body = partial.json()
    assert body["status"] == "issued"
    assert Decimal(body["amount_paid"]) == Decimal("10.00")
    assert Decimal(body["balance_due"]) == issued.total - Decimal("10.00")
    assert [(p["amount"], p["date"], p["reference"]) for p in body["payments"]] == [
        ("10.00", "2026-02-03", "API-1")]
    assert over.status_code == 400 and "amount" in str(over.json())
    assert credited.status_code == 201
    assert void.status_code == 400 and "has credit notes" in str(void.json())
    listed = client.get(API).json()
    row = next(r for r in listed["results"] if r["id"] == issued.pk)
    assert Decimal(row["balance_due"]) == issued.total - Decimal("11.00")
    assert Decimal(row["net_total"]) == issued.total - Decimal("1.00")


def test_a_tenant_sees_what_is_credited_paid_and_due(login, tenant_owner, finance, issued):
    invoicing.credit_note_create(invoice_id=issued.pk, actor=finance, amount=Decimal("4.00"),
                                 reason="goodwill")
    payments.payment_record(invoice_id=issued.pk, actor=finance, amount="6.00")

    page = login(tenant_owner).get("/billing/t/acme/").content.decode()

    row = re.search(rf'id="invoice-{issued.pk}">(.*?)</tr>', page, re.S).group(1)
    assert "4.00" in re.search(r'data-col="credited">(.*?)</td>', row).group(1)
    assert "6.00" in re.search(r'data-col="paid">(.*?)</td>', row).group(1)
    due = f"{issued.total - 10:,.2f}"
    assert due in re.search(r'data-col="balance">(.*?)</td>', row, re.S).group(1)
    pdf = _pdf_text(login(tenant_owner).get(f"/billing/t/acme/invoices/{issued.pk}.pdf"))
    assert f"Balance due {issued.currency} {due}" in pdf


def test_a_payment_date_is_a_day_not_a_time(finance, issued):
    payment = payments.payment_record(invoice_id=issued.pk, actor=finance, amount="1.00",
                                      paid_on=date(2026, 2, 10))
    assert Payment.objects.get(pk=payment.pk).date == date(2026, 2, 10)
