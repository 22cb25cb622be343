"""The pure core of chargeback: metering, rating and invoice lines.

Plain Python and `Decimal`; no Django, no database, no clock (the caller says what `now` is).
Every datetime is timezone-aware and read in UTC; hours are UTC hours. Money is worked out
exactly and rounded once, to the cent, ROUND_HALF_UP, where a line, discount or tax is fixed.
"""

from .errors import BillingError, RateCardError
from .invoicing import (
    InvoiceComputation,
    InvoiceLine,
    UnpricedUsage,
    UsageAmount,
    invoice_lines,
)
from .metering import Allocation, allocated_seconds, allocation_history
from .money import hours_in_month
from .rates import Rate, check_rates, rate_for

__all__ = [
    "Allocation",
    "BillingError",
    "InvoiceComputation",
    "InvoiceLine",
    "Rate",
    "RateCardError",
    "UnpricedUsage",
    "UsageAmount",
    "allocated_seconds",
    "allocation_history",
    "check_rates",
    "hours_in_month",
    "invoice_lines",
    "rate_for",
]
