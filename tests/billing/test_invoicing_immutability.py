"""An issued invoice never changes: not through the model, not through its querysets, and its
lines not at all. (The admin's side is in test_invoicing_admin.py.)"""

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from billing.models import ImmutableInvoiceError, Invoice, InvoiceLine, Rate, UsageRecord
from billing.services import invoicing

H100 = "gpu:nvidia-h100-80gb"


@pytest.fixture
def issued(tenant, finance):
    Rate.objects.create(resource=H100, unit_price=Decimal("2.50"),
                        valid_from=datetime(2025, 1, 1, tzinfo=UTC))
    UsageRecord.objects.create(tenant=tenant, source="allocated", resource=H100,
                               hour=datetime(2026, 1, 2, tzinfo=UTC), unit_seconds=7200)
    draft = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))
    return invoicing.invoice_issue(invoice_id=draft.pk, actor=finance)


def _unchanged(invoice: Invoice) -> None:
    stored = Invoice.objects.get(pk=invoice.pk)
    assert (stored.status, stored.total, stored.number) == ("issued", Decimal("5.00"),
                                                            invoice.number)
    assert list(InvoiceLine.objects.filter(invoice=invoice).values_list("amount", flat=True)) == [
        Decimal("5.00")
    ]


def test_the_model_refuses_to_save_or_delete_an_issued_invoice(issued):
    issued.total = Decimal("0")
    with pytest.raises(ImmutableInvoiceError):
        issued.save()
    with pytest.raises(ImmutableInvoiceError):
        Invoice.objects.get(pk=issued.pk).delete()
    _unchanged(issued)


def test_the_queryset_refuses_to_update_or_delete_an_issued_invoice(issued):
    with pytest.raises(ImmutableInvoiceError):
        Invoice.objects.filter(pk=issued.pk).update(total=Decimal("0"))
    with pytest.raises(ImmutableInvoiceError):
        Invoice.objects.all().update(tenant_name="Someone else")
    with pytest.raises(ImmutableInvoiceError):
        Invoice.objects.filter(pk=issued.pk).delete()
    _unchanged(issued)


def test_lines_of_an_issued_invoice_never_change(issued):
    line = issued.lines.get()
    line.amount = Decimal("0")
    with pytest.raises(ImmutableInvoiceError):
        line.save()
    with pytest.raises(ImmutableInvoiceError):
        InvoiceLine.objects.get(pk=line.pk).delete()
    with pytest.raises(ImmutableInvoiceError):
        InvoiceLine.objects.filter(invoice=issued).update(amount=Decimal("0"))
    with pytest.raises(ImmutableInvoiceError):
        InvoiceLine.objects.filter(invoice=issued).delete()
    with pytest.raises(ImmutableInvoiceError):
        InvoiceLine.objects.create(
            invoice=issued, resource=H100, description="extra", period_start=issued.period_start,
            period_end=issued.period_end, unit_seconds=1, quantity_hours=0, quantity=0,
            unit="hour", unit_price=1, amount=Decimal("1.00"),
        )
    _unchanged(issued)


def test_only_the_lifecycle_moves_an_issued_invoice(issued, finance):
    invoicing.invoice_mark_paid(invoice_id=issued.pk, actor=finance, reference="R-1")

    paid = Invoice.objects.get(pk=issued.pk)
    assert (paid.status, paid.total, paid.payment_reference) == ("paid", Decimal("5.00"), "R-1")
    with pytest.raises(ImmutableInvoiceError):
        Invoice.objects.filter(pk=issued.pk).update(subtotal=Decimal("1"))
