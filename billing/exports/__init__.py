"""Invoice exports for finance: CSV for accounting, XLSX for review, PDF to send the tenant.

- CSV: one row per line, with the invoice's facts repeated on every row so that each row
  stands alone in an accounting import; the discount and the tax are rows of their own, so
  the `amount` column of an invoice adds up to its `invoice_total`. What its credit notes and
  payments add up to are columns of every row too: `credited`, `net_total` (the total less
  the credits), `paid` and `balance_due` (negative when over-settled: a refund is owed).
  Unpriced usage is a row with a quantity and no amount. ISO 8601 dates, `.` decimals, no
  thousands separators, written through `core.csv_export` (it defuses formula-like cells).
- XLSX of a list of invoices: two sheets finance can filter and pivot, "Invoices" (a row per
  invoice) and "Lines" (a row per line, credit, discount, tax and unpriced usage, with its
  invoice's number, tenant and period). XLSX of one invoice: a summary sheet and the invoice's
  own sheet laid out as the invoice reads. Numbers are number cells in the invoice's currency
  format and dates are date cells. Text is always stored as text: a tenant named
  `=HYPERLINK(...)` is a string, never a formula.
- PDF: `templates/billing/invoice_pdf.html` rendered by xhtml2pdf (pure Python, over
  ReportLab), with every external resource refused.
"""

from .csv_rows import (
    CSV_COLUMNS,
    invoice_list_csv_rows,
    invoice_rows,
    invoices_csv,
    write_invoices_csv,
)
from .pdf import invoice_pdf, invoice_pdf_html
from .xlsx import invoices_xlsx, money_format, write_invoice_list_xlsx, write_invoices_xlsx

# The layout of one invoice's files: an issued invoice's PDF, CSV and XLSX are rendered once
# and kept (`billing.services.invoice_files`) while this stays the same. Bump it when what
# they print changes (this package's layouts, templates/billing/invoice_pdf.html).
FILE_LAYOUT = 2

__all__ = [
    "CSV_COLUMNS",
    "FILE_LAYOUT",
    "invoice_list_csv_rows",
    "invoice_pdf",
    "invoice_pdf_html",
    "invoice_rows",
    "invoices_csv",
    "invoices_xlsx",
    "money_format",
    "write_invoice_list_xlsx",
    "write_invoices_csv",
    "write_invoices_xlsx",
]
