"""Invoices: a tenant's month computed as a draft, issued (numbered, immutable), paid or void;
corrected only by credit notes.

The amounts come from `billing.calculations` (exact, rounded once per line): allocated usage
records priced hour by hour at the rate card in force, the tenant's discount, the configured
tax, and a downtime credit for GPU time measured on hosts while they had an open critical
health event. Every move is a conditional UPDATE through `Invoice.move_to`, so two people
issuing the same draft at once cannot both win; numbers come from `DocumentSequence` under a
row lock, in the same transaction as the issue, so they run without gaps.
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from core.audit import audit
from core.errors import DomainError, InvalidTransition, RuleViolation
from core.queueing import enqueue_on_commit
from tenants.models import Tenant

from .. import calculations
from ..calculations.invoicing import NO_RATE
from ..calculations.money import next_month
from ..models import (
    BillingAccount,
    CreditNote,
    DocumentSequence,
    Invoice,
    InvoiceStatus,
)
from ..selectors.issuing import INVOICE_PREFIX
from ..selectors.metering_gaps import describe_spans, unmetered_spans
from . import payments
from .accounts import billing_account_for
from .invoicing_drafts import (
    MonthUsage,
    compute_drafts,
    lock_billing_accounts,
    month_usage,
    totals,
    write_drafts,
)
from .payments import settlement_update
from .webhooks import invoice_issued_webhook

logger = logging.getLogger(__name__)

# Renders an issued invoice's files once its status changed (billing.services.invoice_files).
RENDER_FILES = "billing.tasks.invoice_files_render_task"


def _render_files_after_commit(invoice: Invoice) -> None:
    """Have a worker render the invoice's kept files once the decision commits (see
    settings.INVOICE_FILES_PRERENDER); otherwise its first download renders them."""
    if settings.INVOICE_FILES_PRERENDER:
        enqueue_on_commit(RENDER_FILES, invoice.pk)
CREDIT_NOTE_PREFIX = "CN"
UNMETERED_REASON_MAX_LENGTH = 500


# --- the period -------------------------------------------------------------------------------


def month_period(month: date) -> tuple[datetime, datetime]:
    """[first instant, first instant of the next month) of the UTC calendar month of `month`."""
    start = datetime(month.year, month.month, 1, tzinfo=UTC)
    return start, next_month(start)


def _check_period_ended(start: datetime, end: datetime, *, now: datetime) -> None:
    if start > now:
        raise RuleViolation(
            f"{start:%B %Y} is in the future: an invoice is computed once its month has ended."
        )
    if end > now:
        raise RuleViolation(
            f"{start:%B %Y} has not ended yet: its invoice can be computed from "
            f"{end:%Y-%m-%d %H:%M} UTC."
        )


# --- computing drafts -------------------------------------------------------------------------


def _compute_into(invoice: Invoice, *, tenant: Tenant, account: BillingAccount,
                  audited_by: Any | None = None, audited: bool = False) -> Invoice:
    """Compute the tenant's month into the (locked) draft `invoice`: fields, lines, totals."""
    usage = month_usage(start=invoice.period_start, end=invoice.period_end,
                        tenant_ids=[tenant.pk])
    drafts, errors = compute_drafts(tenants=[tenant], accounts={tenant.pk: account}, usage=usage)
    if tenant.pk in errors:
        raise errors[tenant.pk]
    write_drafts([(invoice, drafts[0])], actor=audited_by, audited=audited)
    return invoice


def _issued_refusal(invoice: Invoice, tenant: Tenant) -> RuleViolation:
    return RuleViolation(
        f"The invoice of {tenant.name} for {invoice.period_start:%B %Y} is {invoice.status} "
        f"as {invoice.number}: it never changes. Correct it with a credit note."
    )


@transaction.atomic
def invoice_compute(*, tenant: Tenant, month: date, actor=None) -> Invoice:
    """Create or recompute `tenant`'s draft invoice for the calendar month holding `month`.

    Refused for a month not yet ended, and for a month whose invoice is already issued (it
    never changes: correct it with a credit note).
    """
    start, end = month_period(month)
    _check_period_ended(start, end, now=timezone.now())
    account = _lock_tenant_billing(tenant)
    invoice = (
        Invoice.objects.select_for_update()
        .filter(tenant=tenant, period_start=start)
        .exclude(status=InvoiceStatus.VOID)
        .first()
    )
    if invoice is not None and not invoice.is_draft:
        raise _issued_refusal(invoice, tenant)
    if invoice is None:
        invoice = Invoice(tenant=tenant, period_start=start, period_end=end)
    return _compute_into(invoice, tenant=tenant, account=account, audited_by=actor, audited=True)


def _tenants_to_bill(start: datetime, usage: MonthUsage) -> list[Tenant]:
    """Every tenant with allocated usage in the month or a draft of it (which may have lost
    its usage since), by name."""
    with_draft = Invoice.objects.filter(
        period_start=start, status=InvoiceStatus.DRAFT
    ).values_list("tenant_id", flat=True)
    ids = set(usage.amounts) | set(with_draft)
    return list(Tenant.objects.filter(pk__in=ids).order_by("name", "pk"))


@transaction.atomic
def invoices_draft_month(*, month: date, actor=None) -> list[Invoice]:
    """Draft (or recompute) the invoice of every tenant with usage in the month, by name.

    One transaction for the month, written in bulk: a tenant whose invoice is already issued is
    left alone, one whose data cannot be priced (a bad rate card, credits above the usage) is
    logged and skipped, the others go on. Running it again recomputes the same drafts.
    """
    start, end = month_period(month)
    _check_period_ended(start, end, now=timezone.now())
    usage = month_usage(start=start, end=end)
    tenants = _tenants_to_bill(start, usage)
    accounts = lock_billing_accounts([tenant.pk for tenant in tenants])
    invoices = {
        invoice.tenant_id: invoice
        for invoice in Invoice.objects.select_for_update()
        .filter(period_start=start, tenant_id__in=list(accounts))
        .exclude(status=InvoiceStatus.VOID)
        .order_by("pk")
    }
    # Issued already: it never changes.
    tenants = [t for t in tenants if t.pk not in invoices or invoices[t.pk].is_draft]
    drafts, errors = compute_drafts(tenants=tenants, accounts=accounts, usage=usage)
    for tenant in tenants:
        if tenant.pk in errors:
            logger.warning("No draft for %s in %s: %s", tenant.slug, f"{start:%Y-%m}",
                           errors[tenant.pk])
    pairs = [
        (invoices.get(draft.tenant.pk)
         or Invoice(tenant=draft.tenant, period_start=start, period_end=end), draft)
        for draft in drafts
    ]
    write_drafts(pairs, actor=actor)
    return [invoice for invoice, _ in pairs]


# --- numbers ----------------------------------------------------------------------------------


def _next_number(prefix: str, year: int) -> str:
    """The next number of the year, under the sequence's row lock (held to the commit, so a
    rolled-back issue gives its number back: no gaps)."""
    DocumentSequence.objects.get_or_create(prefix=prefix, year=year)
    sequence = DocumentSequence.objects.select_for_update().get(prefix=prefix, year=year)
    sequence.last += 1
    sequence.save(update_fields=["last"])
    return f"{prefix}-{year}-{sequence.last:04d}"


# --- the lifecycle ----------------------------------------------------------------------------


def _lock_tenant_billing(tenant: Tenant) -> BillingAccount:
    """Take the tenant's billing account row lock: one computation or issue per tenant at a
    time (the month-end task and finance may overlap). Always taken before an invoice's lock."""
    account = billing_account_for(tenant=tenant)
    return BillingAccount.objects.select_for_update().get(pk=account.pk)


def _locked(invoice_id: int) -> Invoice:
    try:
        return Invoice.objects.select_for_update().select_related("tenant").get(pk=invoice_id)
    except Invoice.DoesNotExist:
        raise RuleViolation(f"There is no invoice {invoice_id}.") from None


def _locked_with_account(invoice_id: int) -> tuple[Invoice, BillingAccount]:
    """The invoice and its tenant's billing account, both locked: the account first, as every
    computation takes them."""
    try:
        tenant = Tenant.objects.get(invoices__pk=invoice_id)
    except Tenant.DoesNotExist:
        raise RuleViolation(f"There is no invoice {invoice_id}.") from None
    account = _lock_tenant_billing(tenant)
    return _locked(invoice_id), account


@transaction.atomic
def invoice_issue(
    *, invoice_id: int, actor, issue_date: date | None = None, unmetered_reason: str = "",
    expected_total: Decimal | None = None,
) -> Invoice:
    """Issue a draft: recomputed first (what is issued is current), then numbered
    INV-<year>-<0001>, dated, due after the payment terms, and immutable from then on.

    Refused while some of its usage has no rate in force (add the rate, then issue: usage is
    never billed at zero); usage of a class outside the vocabulary, which no rate can price,
    is issued as shown-but-not-billed. Refused while hours of its month were never metered
    (the sweep fills them), unless finance gives `unmetered_reason` (kept in the audit event
    with the hours). With `expected_total` (what the person confirmed), refused when the
    recomputed total differs: they confirm again.
    """
    invoice, account = _locked_with_account(invoice_id)
    if not invoice.is_draft:
        raise InvalidTransition(invoice, invoice.status, InvoiceStatus.ISSUED)
    today = timezone.localdate()
    issue_date = issue_date or today
    if issue_date < invoice.period_end.date():
        first_day = f"{invoice.period_end:%Y-%m-%d}"
        raise ValidationError(
            {"issue_date": [f"An invoice is issued after its month, from {first_day}."]}
        )
    if issue_date > today:
        raise ValidationError({"issue_date": ["An invoice is issued today or earlier."]})
    _compute_into(invoice, tenant=invoice.tenant, account=account)
    missing = [item for item in invoice.unpriced if item["reason"] == NO_RATE]
    if missing:
        classes = ", ".join(sorted({item["resource"] for item in missing}))
        raise RuleViolation(
            f"{invoice} has usage that no rate prices ({classes}): add rates for that period, "
            "then issue it. Usage is never billed at zero."
        )
    unmetered = _unmetered_check(invoice, reason=unmetered_reason)
    if expected_total is not None and invoice.total != expected_total:
        raise RuleViolation(
            f"{invoice} now comes to {invoice.total} {invoice.currency}, not the "
            f"{expected_total} {invoice.currency} confirmed: its usage or rates changed. "
            "Look at it again and confirm the new total."
        )
    number = _next_number(INVOICE_PREFIX, issue_date.year)
    due_date = issue_date + timedelta(days=settings.BILLING_PAYMENT_TERMS_DAYS)
    invoice.move_to(
        InvoiceStatus.ISSUED,
        number=number,
        issue_date=issue_date,
        due_date=due_date,
        issued_by=actor,
        issued_at=timezone.now(),
    )
    audit(
        actor=actor,
        action="invoice.issue",
        obj=invoice,
        tenant=invoice.tenant,
        changes={
            "number": number,
            "issue_date": issue_date.isoformat(),
            "due_date": due_date.isoformat(),
            **totals(invoice),
            **unmetered,
        },
    )
    invoice_issued_webhook(invoice=invoice)
    _render_files_after_commit(invoice)
    return invoice


def _unmetered_check(invoice: Invoice, *, reason: str) -> dict[str, Any]:
    """Refuse to issue over hours of the month never metered, unless finance says why; what
    the audit event keeps of an override (the hours and the reason)."""
    spans = unmetered_spans(start=invoice.period_start, end=invoice.period_end)
    if not spans:
        return {}
    reason = (reason or "").strip()
    hours = sum(span.hours for span in spans)
    if not reason:
        raise RuleViolation(
            f"{invoice} covers {hours} hour(s) that were never metered "
            f"({describe_spans(spans)}): the hourly sweep fills them; issue it once they are "
            "metered, or give the reason to issue it without them."
        )
    if len(reason) > UNMETERED_REASON_MAX_LENGTH:
        raise ValidationError(
            {"unmetered_reason": [f"At most {UNMETERED_REASON_MAX_LENGTH} characters."]}
        )
    return {
        "unmetered_override": {
            "reason": reason,
            "hours": hours,
            "spans": [[span.start.isoformat(), span.end.isoformat()] for span in spans],
        }
    }


def _error_text(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return str(error)


def invoices_issue(
    *, invoice_ids: list[int], actor, expected_totals: dict[int, Decimal] | None = None
) -> tuple[list[Invoice], dict[int, str]]:
    """Issue several drafts, each in its own transaction, in id order; returns those issued
    and, by id, why each of the others was not (as `invoice_issue` refuses: no override of
    unmetered hours here). `expected_totals`: what was confirmed of each, by id."""
    issued: list[Invoice] = []
    errors: dict[int, str] = {}
    for invoice_id in sorted(set(invoice_ids)):
        try:
            issued.append(invoice_issue(
                invoice_id=invoice_id, actor=actor,
                expected_total=(expected_totals or {}).get(invoice_id),
            ))
        except (DomainError, ValidationError) as error:
            errors[invoice_id] = _error_text(error)
    return issued, errors


@transaction.atomic
def invoice_mark_paid(
    *, invoice_id: int, actor, paid_at: datetime | None = None, reference: str = ""
) -> Invoice:
    """Record the payment of an issued invoice's whole balance due (`payment_record` of what is
    left after credit notes and earlier payments); an invoice with nothing left to pay (its
    credit notes cover it, or a zero total) is marked paid without one."""
    invoice = _locked(invoice_id)
    now = timezone.now()
    paid_at = paid_at or now
    if paid_at > now + timedelta(minutes=5):
        raise ValidationError({"paid_at": ["A payment is recorded once it has been made."]})
    due = invoice.balance_due
    if invoice.status == InvoiceStatus.ISSUED and due > 0:
        paid_on = timezone.localdate(paid_at) if timezone.is_aware(paid_at) else paid_at.date()
        payments.payment_record(invoice_id=invoice.pk, actor=actor, amount=due,
                                paid_on=min(paid_on, timezone.localdate()), reference=reference)
        invoice.refresh_from_db()
        return invoice
    reference = (reference or "").strip()
    max_length = Invoice._meta.get_field("payment_reference").max_length
    if len(reference) > max_length:
        raise ValidationError({"reference": [f"At most {max_length} characters."]})
    invoice.move_to(
        InvoiceStatus.PAID, paid_at=paid_at, paid_by=actor, payment_reference=reference
    )
    audit(
        actor=actor,
        action="invoice.pay",
        obj=invoice,
        tenant=invoice.tenant,
        changes={"paid_at": paid_at.isoformat(), "reference": reference,
                 "total": str(invoice.total), "balance_due": str(due)},
    )
    _render_files_after_commit(invoice)
    return invoice


def _refuse_void_when_settled(invoice: Invoice) -> None:
    """A void invoice owes nothing, so credit notes or payments against it would stand for
    nothing: such an invoice is corrected with a credit note for what is left instead."""
    if invoice.status != InvoiceStatus.ISSUED:
        return  # the state machine refuses the move with its own words
    notes = list(invoice.credit_notes.order_by("number").values_list("number", flat=True))
    if notes:
        raise RuleViolation(
            f"{invoice} has credit notes ({', '.join(notes)}): an invoice that was credited "
            "is not voided, since the notes would then credit nothing. Issue a credit note for "
            f"what is left ({invoice.currency} {invoice.total - invoice.amount_credited:,.2f}) "
            "instead."
        )
    if invoice.payments.exists():
        raise RuleViolation(
            f"{invoice} has payments recorded ({invoice.currency} {invoice.amount_paid:,.2f}): "
            "a paid invoice is not voided. Credit what should not have been billed with a "
            "credit note (the over-payment then shows as a refund owed)."
        )


@transaction.atomic
def invoice_void(*, invoice_id: int, actor, reason: str) -> Invoice:
    """Void an issued invoice (it stays on record, numbered); the month may be drafted again."""
    reason = (reason or "").strip()
    max_length = Invoice._meta.get_field("void_reason").max_length
    if not reason:
        raise ValidationError({"reason": ["Say why the invoice is void: it stays on record."]})
    if len(reason) > max_length:
        raise ValidationError({"reason": [f"At most {max_length} characters."]})
    invoice = _locked(invoice_id)
    _refuse_void_when_settled(invoice)
    invoice.move_to(
        InvoiceStatus.VOID, voided_at=timezone.now(), voided_by=actor, void_reason=reason
    )
    audit(
        actor=actor,
        action="invoice.void",
        obj=invoice,
        tenant=invoice.tenant,
        changes={"reason": reason, "total": str(invoice.total)},
    )
    _render_files_after_commit(invoice)
    return invoice


def credit_note_check(*, invoice: Invoice, amount: Any, reason: str) -> tuple[Decimal, str]:
    """Refuse a credit note for an invoice not issued, of a bad amount or more than is left,
    or without a reason (field errors `amount` and `reason`); return the amount and reason."""
    if invoice.status not in (InvoiceStatus.ISSUED, InvoiceStatus.PAID):
        raise RuleViolation(
            f"{invoice} is {invoice.status}: only an issued or paid invoice takes a credit note."
        )
    errors: dict[str, list[str]] = {}
    reason = (reason or "").strip()
    if not reason:
        errors["reason"] = ["Say what the credit is for."]
    elif len(reason) > CreditNote._meta.get_field("reason").max_length:
        errors["reason"] = ["At most 500 characters."]
    try:
        if isinstance(amount, float):
            raise TypeError(amount)
        amount = Decimal(amount)
        credited = invoice.credit_notes.aggregate(total=Sum("amount"))["total"] or Decimal("0")
        calculations.check_credit_note(
            invoice_total=invoice.total, already_credited=credited, amount=amount
        )
    except calculations.CreditNoteError as error:
        errors["amount"] = [str(error)]
    except (ArithmeticError, TypeError, ValueError):
        errors["amount"] = [f"{amount!r} is not an amount of money."]
    if errors:
        raise ValidationError(errors)
    return amount, reason


@transaction.atomic
def credit_note_create(*, invoice_id: int, actor, amount: Decimal, reason: str) -> CreditNote:
    """Credit part or all of what is left of an issued (or paid) invoice, numbered
    CN-<year>-<0001>; the invoice itself never changes."""
    # The invoice's row lock serialises credit notes: two cannot both take what is left.
    invoice = _locked(invoice_id)
    amount, reason = credit_note_check(invoice=invoice, amount=amount, reason=reason)
    issue_date = timezone.localdate()
    note = CreditNote.objects.create(
        invoice=invoice,
        number=_next_number(CREDIT_NOTE_PREFIX, issue_date.year),
        amount=amount,
        reason=reason,
        issue_date=issue_date,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    settlement_update(invoice, actor=actor)
    audit(
        actor=actor,
        action="credit_note.create",
        obj=note,
        tenant=invoice.tenant,
        changes={"invoice": invoice.number, "amount": str(amount), "reason": reason,
                 "credited": str(invoice.amount_credited),
                 "balance_due": str(invoice.balance_due), "status": invoice.status},
    )
    return note
