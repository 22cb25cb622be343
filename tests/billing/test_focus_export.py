"""Issue 35, part 5: finance exports a month's billed usage in the FinOps FOCUS format. The file
is checked against the specification's own column list (tests/data/focus-1.2-columns.csv and
its allowed values, copied from FOCUS 1.2): every mandatory column, each value of its type,
nulls only where allowed, custom columns prefixed x_; BilledCost adds up to every issued
invoice's total."""

import csv
import io
import json
import re
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pytest

from billing.models import Invoice, InvoiceLine, UsageRecord
from billing.services import invoicing
from billing.services.accounts import billing_account_update
from core.models import AuditEvent
from tests.factories import TenantFactory

from .cost_data import L40S, cost_month, cost_rates, people

DATA = Path(__file__).resolve().parent.parent / "data"
JAN = date(2026, 1, 1)
DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE]-?\d+)?$")


def _spec_rows(name: str) -> list[dict]:
    text = (DATA / name).read_text()
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


SPEC = {row["ColumnId"]: row for row in _spec_rows("focus-1.2-columns.csv")}
ALLOWED: dict[str, set[str]] = {}
for _row in _spec_rows("focus-1.2-allowed-values.csv"):
    ALLOWED.setdefault(_row["ColumnId"], set()).add(_row["Value"])


def _valid(value: str, data_type: str) -> bool:
    if data_type == "Decimal":
        try:
            Decimal(value)
        except InvalidOperation:
            return False
        return bool(NUMBER.match(value))
    if data_type == "Date/Time":
        return bool(DATE_TIME.match(value))
    if data_type == "JSON":
        try:
            return isinstance(json.loads(value), dict)
        except ValueError:
            return False
    return data_type == "String"


@pytest.fixture
def billed(db, settings, finance):
    """January for three tenants: two issued (one with a discount, under tax), one a draft."""
    settings.BILLING_TAX_PERCENT = Decimal("19")
    cost_rates()
    ada, bob = people()
    acme, globex, initech = (TenantFactory(slug=slug, name=name, cost_center=center) for
                             slug, name, center in (("acme", "Acme Labs", "CC-1"),
                                                    ("globex", "=Globex", ""),
                                                    ("initech", "Initech", "")))
    for tenant in (acme, globex, initech):
        cost_month(tenant, ada=ada, bob=bob)
    billing_account_update(actor=finance, tenant=acme, discount_percent=Decimal("7.5"))
    issued = []
    for tenant in (acme, globex):
        invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)
        issued.append(invoicing.invoice_issue(invoice_id=invoice.pk, actor=finance,
                                              unmetered_reason="test data"))
    invoicing.invoice_compute(tenant=initech, month=JAN)
    return issued


def _rows(response) -> tuple[list[str], list[dict]]:
    reader = csv.DictReader(io.StringIO(response.content.decode()))
    return reader.fieldnames, list(reader)


@pytest.mark.django_db
def test_the_focus_file_meets_the_specifications_columns_and_types(as_user, finance, billed):
    response = as_user(finance).get("/api/v1/billing/invoices/focus.csv", {"month": "2026-01"})

    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/csv")
    columns, rows = _rows(response)
    mandatory = {name for name, spec in SPEC.items() if spec["FeatureLevel"] == "Mandatory"}
    assert len(mandatory) == 21 and mandatory <= set(columns)
    assert all(name in SPEC or name.startswith("x_") for name in columns)
    assert rows
    for row in rows:
        for name in columns:
            if name not in SPEC:
                continue
            spec, value = SPEC[name], row[name]
            if value == "":
                assert spec["AllowsNulls"] == "True", (name, row)
                continue
            assert _valid(value, spec["DataType"]), (name, value)
            if name in ALLOWED:
                assert value in ALLOWED[name], (name, value)
    assert {row["ChargeCategory"] for row in rows} == {"Usage", "Credit", "Tax"}
    # A spreadsheet never runs a tenant's name as a formula.
    assert "'=Globex" in {row["BillingAccountName"] for row in rows}


@pytest.mark.django_db
def test_billed_cost_adds_up_to_each_issued_invoices_total(as_user, finance, billed):
    _, rows = _rows(as_user(finance).get("/api/v1/billing/invoices/focus.csv",
                                         {"month": "2026-01"}))

    per_invoice: dict[str, Decimal] = {}
    for row in rows:
        per_invoice[row["InvoiceId"]] = per_invoice.get(row["InvoiceId"], 0) + Decimal(
            row["BilledCost"])
    assert per_invoice == {invoice.number: invoice.total for invoice in billed}
    # The draft is not billed yet: not in the file.
    assert "initech" not in {row["BillingAccountId"] for row in rows}
    # Each workload is a resource of its own, with its label and launcher as tags.
    chat = next(row for row in rows if row["ResourceName"] == "chat"
                and row["BillingAccountId"] == "acme")
    assert json.loads(chat["Tags"]) == {"label": "support-bot", "launched_by": "ada"}
    assert chat["ServiceCategory"] == "AI and Machine Learning" and chat["x_CostCenter"] == "CC-1"
    assert AuditEvent.objects.filter(action="billing.focus_export").count() == 1


@pytest.mark.django_db
def test_only_finance_exports_and_a_bad_month_is_a_field_error(as_user, login, finance,
                                                               tenant_owner, billed):
    refused = as_user(tenant_owner).get("/api/v1/billing/invoices/focus.csv")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"
    assert login(tenant_owner).get("/billing/invoices/focus.csv").status_code == 403
    bad = as_user(finance).get("/api/v1/billing/invoices/focus.csv", {"month": "2026-1x"})
    assert bad.status_code == 400 and "month" in bad.json()["error"]["fields"]
    # December of the last year a date holds has no month after it: a field error too.
    late = as_user(finance).get("/api/v1/billing/invoices/focus.csv", {"month": "9999-12"})
    assert late.status_code == 400 and "month" in late.json()["error"]["fields"]
    assert not AuditEvent.objects.filter(action="billing.focus_export").exists()


@pytest.mark.django_db
def test_the_invoice_list_offers_the_focus_export(login, finance, billed,
                                                  django_assert_max_num_queries):
    client = login(finance)
    html = client.get("/billing/invoices/").content.decode()
    assert 'id="focus-export"' in html and 'id="export-focus"' in html

    with django_assert_max_num_queries(12):
        response = client.get("/billing/invoices/focus.csv", {"month": "2026-01"})

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="focus-1.2-2026-01.csv"'
    _, rows = _rows(response)
    assert sum(Decimal(row["BilledCost"]) for row in rows) == sum(
        invoice.total for invoice in Invoice.objects.filter(status="issued"))


@pytest.mark.django_db
def test_a_line_no_workload_explains_keeps_its_quantity_and_list_cost(as_user, finance, billed):
    # The L40S records have gone since the invoices were issued: their lines are unattributed
    # whole, and still bill ListUnitPrice * PricingQuantity.
    UsageRecord.objects.filter(resource=L40S).delete()
    _, rows = _rows(as_user(finance).get("/api/v1/billing/invoices/focus.csv",
                                         {"month": "2026-01"}))

    lines = {line.invoice.number: line for line in InvoiceLine.objects.filter(
        resource=L40S, kind="usage", invoice__status="issued").select_related("invoice")}
    unattributed = [row for row in rows if row["SkuId"] == L40S]
    assert len(unattributed) == len(lines) == 2
    for row in unattributed:
        line = lines[row["InvoiceId"]]
        assert row["ResourceId"] == "" and Decimal(row["ListCost"]) == line.amount > 0
        assert Decimal(row["PricingQuantity"]) == line.quantity
        assert Decimal(row["ConsumedQuantity"]) == (Decimal(line.unit_seconds) / 3600).quantize(
            Decimal("0.000001"))
        assert (Decimal(row["ListUnitPrice"]) * Decimal(row["PricingQuantity"])).quantize(
            Decimal("0.01")) == line.amount

