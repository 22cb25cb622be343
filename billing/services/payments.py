"""Settling an issued invoice: payments (an amount, a date, a reference) and what credit notes
and payments add up to on it.

An invoice's `amount_credited` and `amount_paid` are the sums of its credit notes and payments,
written under the invoice's row lock by the service that adds one (`settlement_update`), so
every list, roll-up and export reads its net and its balance due from the invoice's own row.
It becomes paid once payments and credits cover its total; a partial payment leaves it issued,
with a balance due. A payment larger than the balance due is refused (nothing is ever paid
twice by mistake); a credit note after a payment may still over-settle an invoice, which every
figure then shows as a refund owed (a negative balance due).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from core.audit import audit
from core.errors import InvalidTransition, RuleViolation
from core.queueing import enqueue_on_commit

from ..models import Invoice, InvoiceFile, InvoiceStatus, Payment

CENT = Decimal("0.01")
# Renders the files again once what they print changed (billing.services.invoice_files).
RENDER_FILES = "billing.tasks.invoice_files_render_task"


def locked_invoice(invoice_id: int) -> Invoice:
    """The invoice under its row lock (credit notes and payments serialise on it)."""
    try:
        return Invoice.objects.select_for_update().select_related("tenant").get(pk=invoice_id)
    except Invoice.DoesNotExist:
        raise RuleViolation(f"There is no invoice {invoice_id}.") from None


def files_outdated(invoice: Invoice) -> None:
    """Forget the invoice's kept files (they print its settlement, which just changed) and have
    a worker render them again once the change commits (else the next download does)."""
    InvoiceFile.objects.filter(invoice_id=invoice.pk).delete()
    if settings.INVOICE_FILES_PRERENDER:
        enqueue_on_commit(RENDER_FILES, invoice.pk)


def settlement_update(invoice: Invoice, *, actor, paid_at: datetime | None = None,
                      reference: str = "") -> Invoice:
    """Sum the (locked) invoice's credit notes and payments onto it and move it to paid once
    they cover its total (`paid_at` and `reference` then say when and how: the last payment's);
    its kept files are rendered again."""
    credited = invoice.credit_notes.aggregate(s=Sum("amount"))["s"] or Decimal("0")
    paid = invoice.payments.aggregate(s=Sum("amount"))["s"] or Decimal("0")
    Invoice.objects.filter(pk=invoice.pk).update(amount_credited=credited, amount_paid=paid)
    invoice.amount_credited, invoice.amount_paid = credited, paid
    if invoice.status == InvoiceStatus.ISSUED and credited + paid >= invoice.total:
        invoice.move_to(
            InvoiceStatus.PAID, paid_at=paid_at or timezone.now(),
            paid_by=actor if getattr(actor, "is_authenticated", False) else None,
            payment_reference=reference,
        )
    files_outdated(invoice)
    return invoice


def _amount(value: Any) -> Decimal:
    if isinstance(value, float):  # money is never a float: say so rather than round it
        raise ValidationError({"amount": [f"{value!r} is not an amount of money."]})
    try:
        amount = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise ValidationError({"amount": [f"{value!r} is not an amount of money."]}) from None
    if not amount.is_finite() or amount != amount.quantize(CENT):
        raise ValidationError({"amount": ["An amount of money in cents (two places at most)."]})
    if amount <= 0:
        raise ValidationError({"amount": ["A payment is a positive amount."]})
    return amount


def payment_check(*, invoice: Invoice, amount: Any, paid_on: date | None,
                  reference: str) -> tuple[Decimal, date, str]:
    """Refuse a payment of an invoice not issued, of a bad amount or more than its balance
    due, dated in the future, or with too long a reference (field errors `amount`, `paid_on`,
    `reference`); return the amount, date and reference."""
    if invoice.status != InvoiceStatus.ISSUED:
        why = ("nothing is left to pay" if invoice.status == InvoiceStatus.PAID
               else "only an issued invoice is paid")
        raise InvalidTransition(invoice, invoice.status, InvoiceStatus.PAID, why=why)
    errors: dict[str, list[str]] = {}
    reference = (reference or "").strip()
    max_length = Payment._meta.get_field("reference").max_length
    if len(reference) > max_length:
        errors["reference"] = [f"At most {max_length} characters."]
    today = timezone.localdate()
    paid_on = paid_on or today
    if paid_on > today:
        errors["paid_on"] = ["A payment is recorded once it has been made, not in the future."]
    try:
        amount = _amount(amount)
    except ValidationError as error:
        errors.update(error.message_dict)
    else:
        due = invoice.balance_due
        if amount > due:
            errors["amount"] = [
                f"Only {invoice.currency} {due:,.2f} is due on {invoice} (total "
                f"{invoice.total:,.2f}, credited {invoice.amount_credited:,.2f}, paid "
                f"{invoice.amount_paid:,.2f}): a payment is never more than the balance due."
            ]
    if errors:
        raise ValidationError(errors)
    return amount, paid_on, reference


def _paid_at(paid_on: date) -> datetime:
    """When an invoice paid on `paid_on` counts as paid: now if today, else that day's noon UTC."""
    now = timezone.now()
    return now if paid_on == timezone.localdate() else datetime.combine(paid_on, time(12),
                                                                         tzinfo=UTC)


@transaction.atomic
def payment_record(*, invoice_id: int, actor, amount: Any, paid_on: date | None = None,
                   reference: str = "") -> Payment:
    """Record money received for an issued invoice: all or part of its balance due, never more.
    Once payments and credit notes cover its total the invoice is paid; a partial payment
    leaves it issued, with the rest due."""
    invoice = locked_invoice(invoice_id)
    amount, paid_on, reference = payment_check(invoice=invoice, amount=amount, paid_on=paid_on,
                                               reference=reference)
    payment = Payment.objects.create(
        invoice=invoice, amount=amount, date=paid_on, reference=reference,
        recorded_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    settlement_update(invoice, actor=actor, paid_at=_paid_at(paid_on), reference=reference)
    audit(
        actor=actor,
        action="invoice.pay",
        obj=invoice,
        tenant=invoice.tenant,
        changes={"amount": str(amount), "date": paid_on.isoformat(), "reference": reference,
                 "paid": str(invoice.amount_paid), "credited": str(invoice.amount_credited),
                 "balance_due": str(invoice.balance_due), "status": invoice.status},
    )
    return payment
