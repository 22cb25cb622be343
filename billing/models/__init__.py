"""What the fleet costs: billing accounts, rate cards, usage, metering windows, invoices.

Money is Decimal and rounded once, at the invoice line (see `billing.calculations`). Usage
ingestion is idempotent: every usage record has a unique key (tenant, workload or host,
resource class, hour, source), so metering a window twice never counts twice. An issued
invoice never changes: its row refuses every change but the lifecycle's own fields, and its
lines refuse every change at all, through the model and its querysets alike.
"""

from .accounts import BillingAccount, BudgetAlert, Rate
from .exports import ExportStatus, InvoiceExport
from .fields import MONEY, PERCENT, PRICE, QUANTITY
from .invoices import (
    LIFECYCLE_FIELDS,
    CreditNote,
    DocumentSequence,
    ImmutableInvoiceError,
    Invoice,
    InvoiceFile,
    InvoiceLine,
    InvoiceLineQuerySet,
    InvoiceQuerySet,
    InvoiceStatus,
    InvoiceSummary,
    Payment,
)
from .usage import (
    CrossCheck,
    MeteringFlag,
    MeteringWindow,
    UsageDaily,
    UsageRecord,
    UsageStamp,
    WindowStatus,
)

__all__ = [
    "LIFECYCLE_FIELDS",
    "MONEY",
    "PERCENT",
    "PRICE",
    "QUANTITY",
    "BillingAccount",
    "BudgetAlert",
    "CreditNote",
    "CrossCheck",
    "DocumentSequence",
    "ExportStatus",
    "ImmutableInvoiceError",
    "Invoice",
    "InvoiceExport",
    "InvoiceFile",
    "InvoiceLine",
    "InvoiceLineQuerySet",
    "InvoiceQuerySet",
    "InvoiceStatus",
    "InvoiceSummary",
    "MeteringFlag",
    "MeteringWindow",
    "Payment",
    "Rate",
    "UsageDaily",
    "UsageRecord",
    "UsageStamp",
    "WindowStatus",
]
