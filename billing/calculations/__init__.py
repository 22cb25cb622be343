"""The pure core of chargeback: metering, rating, invoice lines, credits, budgets, utilization.

Plain Python and `Decimal`; no Django, no database, no clock (the caller says what `now` is).
Every datetime is timezone-aware and read in UTC; hours are UTC hours. Money is worked out
exactly and rounded once, to the cent, ROUND_HALF_UP, where a line, discount or tax is fixed.
"""

from .budgets import ALERT_THRESHOLDS, budget_alerts_due, month_forecast
from .credit_notes import check_credit_note
from .downtime import (
    CriticalEvent,
    credit_lines,
    downtime_credit_by_hour,
    downtime_credit_seconds,
)
from .errors import BillingError, CreditNoteError, RateCardError
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
from .utilization import idle_gpu_seconds, utilization

__all__ = [
    "ALERT_THRESHOLDS",
    "Allocation",
    "BillingError",
    "CreditNoteError",
    "CriticalEvent",
    "InvoiceComputation",
    "InvoiceLine",
    "Rate",
    "RateCardError",
    "UnpricedUsage",
    "UsageAmount",
    "allocated_seconds",
    "allocation_history",
    "budget_alerts_due",
    "check_credit_note",
    "check_rates",
    "credit_lines",
    "downtime_credit_by_hour",
    "downtime_credit_seconds",
    "hours_in_month",
    "idle_gpu_seconds",
    "invoice_lines",
    "month_forecast",
    "rate_for",
    "utilization",
]
