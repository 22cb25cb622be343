"""What issuing drafts would do, for the confirmation that asks first: each draft's tenant,
the number it would take, its total, and the hours of its month never metered.

An invoice cannot be unissued, so every place that issues (the invoice page, "issue selected
drafts", the admin action) names these before it acts, and acts only on a confirmation that
names the same: a number taken meanwhile by another issue, or a total that changed, asks again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.utils import timezone

from ..models import DocumentSequence, Invoice
from .metering_gaps import UnmeteredSpan, unmetered_spans

INVOICE_PREFIX = "INV"


@dataclass(frozen=True)
class IssuePreview:
    """One draft as its issue would make it."""

    invoice_id: int
    tenant_name: str
    month_label: str
    number: str
    total: Decimal
    currency: str
    unmetered: list[UnmeteredSpan]

    @property
    def unmetered_hours(self) -> int:
        return sum(span.hours for span in self.unmetered)

    def __str__(self) -> str:
        return (f"{self.number} to {self.tenant_name} for {self.month_label}: "
                f"{self.total:,.2f} {self.currency}")


def issue_previews(*, invoices: Iterable[Invoice], issue_date: date | None = None
                   ) -> list[IssuePreview]:
    """The drafts among `invoices` as they would be issued together today, in the order
    `invoicing.invoices_issue` issues them (by id), numbered on from the year's last number."""
    year = (issue_date or timezone.localdate()).year
    last = (
        DocumentSequence.objects.filter(prefix=INVOICE_PREFIX, year=year)
        .values_list("last", flat=True).first()
    ) or 0
    drafts = sorted((i for i in invoices if i.status == Invoice.Status.DRAFT),
                    key=lambda invoice: invoice.pk)
    # Metering windows are the fleet's, not a tenant's: one look per month.
    gaps = {
        period: unmetered_spans(start=period[0], end=period[1])
        for period in {(invoice.period_start, invoice.period_end) for invoice in drafts}
    }
    return [
        IssuePreview(
            invoice_id=invoice.pk,
            tenant_name=invoice.tenant_name,
            month_label=invoice.month_label,
            number=f"{INVOICE_PREFIX}-{year}-{last + position:04d}",
            total=invoice.total,
            currency=invoice.currency,
            unmetered=gaps[invoice.period_start, invoice.period_end],
        )
        for position, invoice in enumerate(drafts, start=1)
    ]


def confirmation_name(previews: list[IssuePreview]) -> str:
    """What a confirmation must name to issue exactly these: the numbers and totals."""
    return "; ".join(f"{p.number} {p.total}" for p in previews)
