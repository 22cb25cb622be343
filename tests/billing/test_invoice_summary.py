"""InvoiceSummary, kept by triggers, always says what summing the invoices says: after every
kind of write (computing drafts, issuing, paying, voiding, deleting a draft, bulk writes,
updates through the queryset), and the invoice list's totals read it only while it applies."""

from decimal import Decimal

import pytest

from billing.models import Invoice, InvoiceStatus, InvoiceSummary
from billing.selectors.finance import (
    invoice_list_totals,
    invoice_summary_totals,
    invoice_totals,
)
from billing.services import invoicing

from .finance_data import FEB, JAN, bill, tenant_with_cost_center

pytestmark = pytest.mark.django_db


def _summed(statuses=()) -> object:
    invoices = Invoice.objects.all()
    if statuses:
        invoices = invoices.filter(status__in=statuses)
    return invoice_totals(invoices=invoices)


def _agrees() -> None:
    assert invoice_summary_totals() == _summed()
    for status in InvoiceStatus.values:
        assert invoice_summary_totals(statuses=[status]) == _summed([status]), status
    assert invoice_summary_totals(statuses=["draft", "paid"]) == _summed(["draft", "paid"])


def test_the_summary_follows_every_write(finance):
    acme = tenant_with_cost_center("acme-s", "Acme", "CC-1")
    globex = tenant_with_cost_center("globex-s", "Globex", "CC-2")
    _agrees()

    draft = bill(acme, JAN, 10)
    bill(globex, JAN, 20)
    _agrees()
    bill(acme, JAN, 12)  # recomputed: the draft's amounts change
    _agrees()

    issued = invoicing.invoice_issue(invoice_id=draft.pk, actor=finance)
    _agrees()
    invoicing.invoice_mark_paid(invoice_id=issued.pk, actor=finance)
    _agrees()
    other = invoicing.invoice_issue(invoice_id=bill(globex, FEB, 3).pk, actor=finance)
    invoicing.invoice_void(invoice_id=other.pk, actor=finance, reason="wrong")
    _agrees()

    Invoice.objects.filter(status=InvoiceStatus.DRAFT).update(subtotal=Decimal("7.00"))
    _agrees()
    Invoice.objects.filter(status=InvoiceStatus.DRAFT).delete()
    _agrees()
    totals = invoice_summary_totals()
    assert totals.count == 2 and totals.drafts == 0


def test_the_list_reads_the_summary_only_unfiltered_or_by_status(
    finance, django_assert_num_queries
):
    acme = tenant_with_cost_center("acme-t", "Acme", "CC-1")
    bill(acme, JAN, 10)
    # A row the summary says that the invoices do not: which one was read shows.
    InvoiceSummary.objects.filter(status="draft").update(invoices=99)
    invoices = Invoice.objects.all()

    assert invoice_list_totals(user=finance, invoices=invoices, filters={}).count == 99
    assert invoice_list_totals(
        user=finance, invoices=invoices, filters={"status": ["draft"], "sort": ["-total"],
                                                  "q": "", "period": None}
    ).count == 99
    narrowed = invoices.filter(cost_center="CC-1")
    assert invoice_list_totals(user=finance, invoices=narrowed,
                               filters={"cost_center": "CC-1"}).count == 1
    assert invoice_list_totals(user=finance, invoices=invoices, filters=None).count == 1
    with django_assert_num_queries(1):
        invoice_list_totals(user=finance, invoices=invoices, filters={})
