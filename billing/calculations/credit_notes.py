"""Credit notes: a credit against an issued invoice, which never changes the invoice itself."""

from decimal import Decimal

from .errors import CreditNoteError
from .money import CENT, exact


def check_credit_note(
    *, invoice_total: Decimal, already_credited: Decimal, amount: Decimal
) -> Decimal:
    """Refuse a credit of zero or less, of fractions of a cent, or larger than what is left of
    the invoice; return what is left after it."""
    total, credited, credit = exact(invoice_total), exact(already_credited), exact(amount)
    if credit <= 0:
        raise CreditNoteError(f"A credit note credits a positive amount, not {amount}.")
    if Decimal(amount) != Decimal(amount).quantize(CENT):
        raise CreditNoteError(f"A credit note is in whole cents, not {amount}.")
    left = total - credited
    if credit > left:
        raise CreditNoteError(
            f"A credit of {amount} is more than is left of the invoice "
            f"({Decimal(invoice_total) - Decimal(already_credited)} of {invoice_total})."
        )
    return Decimal(invoice_total) - Decimal(already_credited) - Decimal(amount)
