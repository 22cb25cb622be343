"""What an invoice document says: plain dataclasses the exports render, built without the ORM.

An `InvoiceDocument` is an invoice as finance reads it: who is billed (tenant, cost center),
for which period, when it was issued and is due, its lines, its credit lines, the usage left
unpriced, and its totals. Dates are calendar dates in UTC and periods are inclusive of both
ends, as invoices print them (March is 2025-03-01 to 2025-03-31), while the calculations work
on half-open [start, end) instants.
"""

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Literal

from .calculations import InvoiceComputation, InvoiceLine, UnpricedUsage

LineType = Literal["usage", "credit", "unpriced"]


@dataclass(frozen=True)
class DocumentLine:
    """One line as printed: usage, a downtime credit, or usage shown but not billed.

    `unit` is the rate card's: "hour" (quantity in unit-hours) or "month" (unit-months).
    An unpriced line has a quantity in hours and no price or amount: reported, not billed.
    """

    line_type: LineType
    resource_class: str
    description: str
    period_start: date
    period_end: date
    quantity_hours: Decimal
    quantity: Decimal | None
    unit: str
    unit_price: Decimal | None
    amount: Decimal | None


@dataclass(frozen=True)
class DocumentTotals:
    """The sums at the foot of an invoice; lines + credits + discount + tax = total."""

    subtotal: Decimal
    discount_percent: Decimal
    discount: Decimal
    tax_percent: Decimal | None
    tax: Decimal
    total: Decimal


@dataclass(frozen=True)
class SettlementLine:
    """A credit note or a payment of an invoice, as printed after its total."""

    kind: Literal["credit_note", "payment"]
    date: date
    reference: str  # the credit note's number, or the payment's reference
    description: str  # the credit note's reason, or "Payment"
    amount: Decimal

    @property
    def label(self) -> str:
        """How it is named after an invoice's total."""
        if self.kind == "credit_note":
            return f"Credit note {self.reference} ({self.date:%Y-%m-%d})"
        reference = f", {self.reference}" if self.reference else ""
        return f"Payment {self.date:%Y-%m-%d}{reference}"


@dataclass(frozen=True)
class InvoiceDocument:
    """One tenant's invoice for one period, ready to export; with what its credit notes and
    payments add up to (`credited`, `paid`) and, for one invoice's own files, each of them."""

    number: str
    tenant_name: str
    tenant_slug: str
    cost_center: str
    period_start: date
    period_end: date
    issue_date: date
    due_date: date
    currency: str
    lines: tuple[DocumentLine, ...]
    credit_lines: tuple[DocumentLine, ...]
    unpriced: tuple[DocumentLine, ...]
    totals: DocumentTotals
    status: str
    credited: Decimal = Decimal("0")
    paid: Decimal = Decimal("0")
    settlement: tuple[SettlementLine, ...] = ()

    @property
    def net_total(self) -> Decimal:
        """The total less its credit notes."""
        return self.totals.total - self.credited

    @property
    def balance_due(self) -> Decimal:
        """What is left to pay; negative when over-settled (a refund is owed)."""
        return self.totals.total - self.credited - self.paid

    def __post_init__(self) -> None:
        # The currency goes into spreadsheet number formats: only an ISO 4217 code may.
        if not re.fullmatch(r"[A-Z]{3}", self.currency):
            raise ValueError(f"Currency must be an ISO 4217 code, not {self.currency!r}.")
        if self.due_date < self.issue_date:
            raise ValueError("An invoice cannot fall due before it is issued.")


@dataclass(frozen=True)
class ExportInvoice:
    """An invoice as the CSV of a list reads it: its facts as an `InvoiceDocument` states
    them, its priced lines as plain value tuples (invoice id, kind, resource, period start and
    end, quantity in hours, quantity, unit, unit price, amount; usage lines first, then
    credits) and its unpriced usage as stored. Plain values, so that an export of thousands
    of invoices builds no object per line."""

    number: str
    tenant_name: str
    tenant_slug: str
    cost_center: str
    period_start: date
    period_end: date
    issue_date: date
    due_date: date
    currency: str
    status: str
    discount_percent: Decimal
    discount: Decimal
    tax_percent: Decimal | None
    tax: Decimal
    total: Decimal
    unpriced: list[dict]
    lines: list[tuple]
    credited: Decimal = Decimal("0")
    paid: Decimal = Decimal("0")


def last_day(end: datetime) -> date:
    """The last calendar day of a half-open period ending at `end`."""
    return (end - timedelta(microseconds=1)).date()


def _priced_line(line: InvoiceLine) -> DocumentLine:
    description = line.label if line.kind == "usage" else f"Downtime credit: {line.label}"
    return DocumentLine(
        line_type=line.kind,
        resource_class=line.resource,
        description=description,
        period_start=line.period_start.date(),
        period_end=last_day(line.period_end),
        quantity_hours=line.quantity_hours,
        quantity=line.quantity,
        unit=line.unit,
        unit_price=line.unit_price,
        amount=line.amount,
    )


def _unpriced_line(usage: UnpricedUsage) -> DocumentLine:
    return DocumentLine(
        line_type="unpriced",
        resource_class=usage.resource,
        description=f"{usage.label}: not billed, {usage.reason}",
        period_start=usage.period_start.date(),
        period_end=last_day(usage.period_end),
        quantity_hours=usage.quantity_hours,
        quantity=None,
        unit="hour",
        unit_price=None,
        amount=None,
    )


def invoice_document(
    *,
    computation: InvoiceComputation,
    number: str,
    tenant_name: str,
    tenant_slug: str,
    cost_center: str,
    issue_date: date,
    due_date: date,
    currency: str,
    status: str,
    credited: Decimal = Decimal("0"),
    paid: Decimal = Decimal("0"),
    settlement: tuple[SettlementLine, ...] = (),
) -> InvoiceDocument:
    """The document for a computed invoice and the facts only the caller knows."""
    return InvoiceDocument(
        number=number,
        tenant_name=tenant_name,
        tenant_slug=tenant_slug,
        cost_center=cost_center,
        period_start=computation.period_start.date(),
        period_end=last_day(computation.period_end),
        issue_date=issue_date,
        due_date=due_date,
        currency=currency,
        lines=tuple(_priced_line(line) for line in computation.lines),
        credit_lines=tuple(_priced_line(line) for line in computation.credit_lines),
        unpriced=tuple(_unpriced_line(usage) for usage in computation.unpriced),
        totals=DocumentTotals(
            subtotal=computation.subtotal,
            discount_percent=computation.discount_percent,
            discount=computation.discount,
            tax_percent=computation.tax_percent,
            tax=computation.tax,
            total=computation.total,
        ),
        status=status,
        credited=credited,
        paid=paid,
        settlement=settlement,
    )
