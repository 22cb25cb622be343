"""Migration 0008: every invoice paid before it becomes one payment (of its total less the credit
notes issued before it was paid), every invoice's credit notes and payments are summed onto it,
and the invoice summary sums them from then on."""

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from billing.models import Invoice, InvoiceSummary, Payment
from billing.selectors.finance import invoice_summary_totals
from billing.services import payments
from tests.support.migrations import migrate_to, migrate_to_latest

BEFORE = [("billing", "0007_rate_periods_never_overlap")]


@pytest.mark.django_db(transaction=True)
def test_paid_invoices_become_one_payment_each_and_credits_are_summed(finance):
    apps = migrate_to(BEFORE)
    try:
        Tenant = apps.get_model("tenants", "Tenant")
        Invoice0005 = apps.get_model("billing", "Invoice")
        CreditNote0005 = apps.get_model("billing", "CreditNote")
        tenant = Tenant.objects.create(slug="acme", name="Acme Labs")
        paid_at = datetime(2026, 2, 10, 9, tzinfo=UTC)

        def invoice(month: int, status: str, **extra):
            return Invoice0005.objects.create(
                tenant=tenant, period_start=datetime(2026, month, 1, tzinfo=UTC),
                period_end=datetime(2026, month + 1, 1, tzinfo=UTC), status=status,
                tenant_name="Acme Labs", currency="EUR", total=Decimal("100.00"),
                number=f"INV-2026-000{month}", issue_date=date(2026, month + 1, 1), **extra)

        paid = invoice(1, "paid", paid_at=paid_at, paid_by_id=finance.pk,
                       payment_reference="SEPA-7")
        issued = invoice(2, "issued")
        for number, target, amount, created in (
            ("CN-1", paid, "30.00", datetime(2026, 2, 5, tzinfo=UTC)),  # before the payment
            ("CN-2", paid, "5.00", datetime(2026, 2, 20, tzinfo=UTC)),  # after: over-settled
            ("CN-3", issued, "12.50", datetime(2026, 3, 5, tzinfo=UTC)),
        ):
            CreditNote0005.objects.create(invoice=target, number=number, amount=Decimal(amount),
                                          reason="r", issue_date=created.date(),
                                          created_at=created)
    finally:
        migrate_to_latest()

    payment = Payment.objects.get()
    assert (payment.invoice_id, payment.amount, payment.date, payment.reference,
            payment.recorded_by_id) == (paid.pk, Decimal("70.00"), date(2026, 2, 10), "SEPA-7",
                                        finance.pk)
    migrated = Invoice.objects.get(pk=paid.pk)
    assert (migrated.amount_credited, migrated.amount_paid, migrated.balance_due) == (
        Decimal("35.00"), Decimal("70.00"), Decimal("-5.00"))
    assert Invoice.objects.get(pk=issued.pk).balance_due == Decimal("87.50")
    totals = invoice_summary_totals()
    assert (totals.credited, totals.paid, totals.balance_due) == (
        Decimal("47.50"), Decimal("70.00"), Decimal("82.50"))

    # The summary's triggers sum what is recorded from now on.
    payments.payment_record(invoice_id=issued.pk, actor=finance, amount="7.50")
    assert InvoiceSummary.objects.get(status="issued").paid == Decimal("7.50")
    assert invoice_summary_totals().balance_due == Decimal("75.00")
