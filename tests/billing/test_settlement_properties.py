"""Property test: random invoices, credit notes and payments, recorded through the services, and
every surface finance and the tenant look at shows the same net and balance due, read back as a
user reads it: the invoice page, the invoice list's totals, the cost-center roll-up and its CSV,
the tenant's spend page, the API, the invoice's CSV, XLSX and PDF, and the list's CSV and XLSX.
"""

import csv
import io
import re
from datetime import date
from decimal import ROUND_DOWN, Decimal

import openpyxl
import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pypdf import PdfReader

from billing.models import Invoice, InvoiceStatus
from billing.services import invoicing, payments
from tests.billing.finance_data import bill

CENT = Decimal("0.01")
MONTHS = [date(2026, month, 1) for month in range(1, 7)]
API = "/api/v1/billing/invoices/"

# One move on an invoice: a credit note or a payment of a share of what may still be credited
# (or paid), or a payment of more than is due (always refused).
move = st.tuples(st.sampled_from(["credit", "pay", "overpay"]),
                 st.integers(min_value=1, max_value=100))
invoice_plan = st.tuples(st.integers(min_value=1, max_value=60), st.lists(move, max_size=4))


def money(text: str) -> Decimal:
    """A figure as a page shows it ("EUR 1,234.50", "-3.10", or with a minus sign)."""
    match = re.search(r"[-\u2212]?[\d,]+\.\d\d", text)
    assert match, text
    return Decimal(match.group(0).replace(",", "").replace("\u2212", "-"))


def by_id(html: str, element_id: str) -> Decimal:
    match = re.search(rf'id="{element_id}"[^>]*>(.*?)</', html, re.S)
    assert match, element_id
    return money(match.group(1))


def share(amount: Decimal, percent: int) -> Decimal:
    return max((amount * percent / 100).quantize(CENT, ROUND_DOWN), CENT)


def _settle(invoice: Invoice, moves, finance) -> None:
    for kind, percent in moves:
        invoice.refresh_from_db()
        if kind == "credit":
            left = invoice.total - invoice.amount_credited
            if left > 0:
                invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance,
                                             amount=share(left, percent), reason="correction")
        elif kind == "pay" and invoice.status == InvoiceStatus.ISSUED and invoice.balance_due > 0:
            payments.payment_record(invoice_id=invoice.pk, actor=finance,
                                    amount=share(invoice.balance_due, percent),
                                    reference=f"BANK-{percent}")
        elif kind == "overpay" and invoice.status == InvoiceStatus.ISSUED:
            with pytest.raises(ValidationError) as refused:
                payments.payment_record(invoice_id=invoice.pk, actor=finance,
                                        amount=invoice.balance_due + share(invoice.total, percent))
            assert "balance due" in str(refused.value)


def _body(response) -> bytes:
    assert response.status_code == 200, response.status_code
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


def _csv(body: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(body.decode())))


def _sheet_rows(body: bytes, sheet: str) -> list[dict]:
    rows = list(openpyxl.load_workbook(io.BytesIO(body))[sheet].iter_rows(values_only=True))
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def _check_invoice_surfaces(client, api, invoice: Invoice) -> None:
    net, due = invoice.total - invoice.amount_credited, invoice.balance_due
    page = client.get(f"/billing/invoices/{invoice.pk}/").content.decode()
    assert by_id(page, "settle-credited") == invoice.amount_credited
    assert by_id(page, "settle-net") == net
    assert by_id(page, "settle-paid") == invoice.amount_paid
    assert by_id(page, "settle-balance") == due

    body = api.get(f"{API}{invoice.pk}/").json()
    assert Decimal(body["net_total"]) == net and Decimal(body["balance_due"]) == due
    assert sum(Decimal(n["amount"]) for n in body["credit_notes"]) == invoice.amount_credited
    assert sum(Decimal(p["amount"]) for p in body["payments"]) == invoice.amount_paid

    rows = _csv(_body(client.get(f"/billing/invoices/{invoice.pk}/invoice.csv")))
    assert {(Decimal(r["net_total"]), Decimal(r["balance_due"])) for r in rows} == {(net, due)}

    xlsx = _body(client.get(f"/billing/invoices/{invoice.pk}/invoice.xlsx"))
    summary = _sheet_rows(xlsx, "Summary")[0]
    assert Decimal(str(summary["Net total"])).quantize(CENT) == net
    assert Decimal(str(summary["Balance due"])).quantize(CENT) == due

    pdf = _body(client.get(f"/billing/invoices/{invoice.pk}/invoice.pdf"))
    text = " ".join(" ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages).split())
    if invoice.amount_credited or invoice.amount_paid:
        assert re.search(rf"Balance due\s*{invoice.currency} {due:,.2f}", text), text
        for payment in invoice.payments.all():
            assert f"Payment {payment.date:%Y-%m-%d}" in text
        for note in invoice.credit_notes.all():
            assert note.number in text
    else:
        assert "Balance due" not in text


@pytest.mark.django_db
# An example renders a dozen pages and files: no shrinking (minutes on a shared machine); a
# failure prints its example as drawn.
@settings(max_examples=8, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plans=st.lists(invoice_plan, min_size=1, max_size=3))
def test_every_surface_shows_the_same_net_and_balance_due(
    client, api_client, tenant, tenant_owner, finance, plans
):
    with transaction.atomic():
        invoices = []
        for month, (gpu_hours, moves) in zip(MONTHS, plans, strict=False):
            draft = bill(tenant, month, gpu_hours)
            invoice = invoicing.invoice_issue(invoice_id=draft.pk, actor=finance)
            _settle(invoice, moves, finance)
            invoice.refresh_from_db()
            invoices.append(invoice)

        for invoice in invoices:  # the model's own word, checked against the records
            credited = sum((n.amount for n in invoice.credit_notes.all()), Decimal(0))
            paid = sum((p.amount for p in invoice.payments.all()), Decimal(0))
            assert (invoice.amount_credited, invoice.amount_paid) == (credited, paid)
            # Payments never exceed what was due: only a credit note after them over-settles.
            assert invoice.balance_due >= 0 or credited > 0
            settled = credited + paid >= invoice.total
            assert invoice.status == (InvoiceStatus.PAID if settled else InvoiceStatus.ISSUED)

        client.force_login(finance, backend="django.contrib.auth.backends.ModelBackend")
        api_client.force_authenticate(finance)
        for invoice in invoices:
            _check_invoice_surfaces(client, api_client, invoice)

        total = sum((i.total for i in invoices), Decimal(0))
        credited = sum((i.amount_credited for i in invoices), Decimal(0))
        paid = sum((i.amount_paid for i in invoices), Decimal(0))
        due = total - credited - paid

        # The invoice list's totals: from the summary table (every invoice), and summed over a
        # filtered list (the tenant's).
        for query in ("", "?tenant=acme"):
            page = client.get(f"/billing/invoices/{query}").content.decode()
            assert by_id(page, "totals-total") == total
            assert by_id(page, "totals-credited") == -credited
            assert by_id(page, "totals-net") == total - credited
            assert by_id(page, "totals-paid") == -paid
            assert by_id(page, "totals-balance") == due

        rows = _csv(_body(client.get("/billing/invoices/export.csv")))
        per_invoice = {r["invoice_number"]: (Decimal(r["net_total"]), Decimal(r["balance_due"]))
                       for r in rows}
        assert per_invoice == {i.number: (i.total - i.amount_credited, i.balance_due)
                               for i in invoices}
        sheet = _sheet_rows(_body(client.get("/billing/invoices/export.xlsx")), "Invoices")
        assert {r["Invoice"]: Decimal(str(r["Balance due"])).quantize(CENT) for r in sheet} == {
            i.number: i.balance_due for i in invoices}

        rollup = client.get("/billing/cost-centers/")
        rows = rollup.context["rows"]
        assert sum((r.credited for r in rows), Decimal(0)) == credited
        assert sum((r.paid for r in rows), Decimal(0)) == paid
        assert sum((r.outstanding for r in rows), Decimal(0)) == due
        assert sum((r.over_settled for r in rows), Decimal(0)) == sum(
            (i.over_settled for i in invoices), Decimal(0))
        exported = _csv(_body(client.get("/billing/cost-centers/?format=csv")))
        assert sum((Decimal(r["outstanding"]) for r in exported), Decimal(0)) == due
        assert sum((Decimal(r["net_total"]) for r in exported), Decimal(0)) == total - credited

        client.force_login(tenant_owner, backend="django.contrib.auth.backends.ModelBackend")
        spend = client.get("/billing/t/acme/").content.decode()
        for invoice in invoices:
            row = re.search(rf'id="invoice-{invoice.pk}">(.*?)</tr>', spend, re.S).group(1)
            balance = re.search(r'data-col="balance">(.*?)</td>', row, re.S).group(1)
            assert money(balance) == invoice.balance_due
        transaction.set_rollback(True)
