"""Invoice exports for finance: CSV for accounting, XLSX for review, PDF to send the tenant.

- CSV: one row per line, with the invoice's facts repeated on every row so that each row
  stands alone in an accounting import; the discount and the tax are rows of their own, so
  the `amount` column of an invoice adds up to its `invoice_total`. What its credit notes and
  payments add up to are columns of every row too: `credited`, `net_total` (the total less
  the credits), `paid` and `balance_due` (negative when over-settled: a refund is owed).
  Unpriced usage is a row with a quantity and no amount. ISO 8601 dates, `.` decimals, no
  thousands separators, written through `portal.csv_export` (it defuses formula-like cells).
- XLSX of a list of invoices: two sheets finance can filter and pivot, "Invoices" (a row per
  invoice) and "Lines" (a row per line, credit, discount, tax and unpriced usage, with its
  invoice's number, tenant and period). XLSX of one invoice: a summary sheet and the invoice's
  own sheet laid out as the invoice reads. Numbers are number cells in the invoice's currency
  format and dates are date cells. Text is always stored as text: a tenant named
  `=HYPERLINK(...)` is a string, never a formula.
- PDF: `templates/billing/invoice_pdf.html` rendered by xhtml2pdf (pure Python, over
  ReportLab), with every external resource refused.
"""

import io
from collections.abc import Iterable, Iterator
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import IO

from django.template.loader import render_to_string
from openpyxl import Workbook
from openpyxl.cell.cell import ERROR_CODES, ILLEGAL_CHARACTERS_RE, Cell, WriteOnlyCell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet._write_only import WriteOnlyWorksheet
from xhtml2pdf import pisa
from xhtml2pdf.config.resources import ResourceAccessPolicy

from portal import csv_export

from .calculations.invoicing import class_label, class_order, quantity_unit
from .documents import DocumentLine, ExportInvoice, InvoiceDocument, SettlementLine, last_day

# The layout of one invoice's files: an issued invoice's PDF, CSV and XLSX are rendered once
# and kept (`billing.services.invoice_files`) while this stays the same. Bump it when what
# they print changes (this module's layouts, templates/billing/invoice_pdf.html).
FILE_LAYOUT = 2

CSV_COLUMNS = (
    "invoice_number",
    "tenant",
    "tenant_slug",
    "cost_center",
    "period_start",
    "period_end",
    "issue_date",
    "due_date",
    "currency",
    "status",
    "line_type",
    "resource_class",
    "description",
    "line_period_start",
    "line_period_end",
    "quantity_hours",
    "quantity",
    "unit",
    "unit_price",
    "amount",
    "tax_rate",
    "invoice_total",
    "credited",
    "net_total",
    "paid",
    "balance_due",
)


def _number(value: Decimal | None) -> str:
    # Fixed-point always: str(Decimal) may answer "1E+2", which no accounting import reads.
    return "" if value is None else format(value, "f")


def _line_row(line: DocumentLine) -> dict[str, str]:
    return {
        "line_type": line.line_type,
        "resource_class": line.resource_class,
        "description": line.description,
        "line_period_start": line.period_start.isoformat(),
        "line_period_end": line.period_end.isoformat(),
        "quantity_hours": _number(line.quantity_hours),
        "quantity": _number(line.quantity),
        "unit": line.unit,
        "unit_price": _number(line.unit_price),
        "amount": _number(line.amount),
    }


def _adjustment_rows(document: InvoiceDocument) -> Iterator[dict[str, str]]:
    totals, period = document.totals, (document.period_start, document.period_end)
    adjustments = []
    if totals.discount:
        adjustments.append(("discount", f"Discount {totals.discount_percent} %", totals.discount))
    if totals.tax_percent is not None:
        adjustments.append(("tax", f"Tax {totals.tax_percent} %", totals.tax))
    for line_type, description, amount in adjustments:
        yield {
            "line_type": line_type,
            "description": description,
            "line_period_start": period[0].isoformat(),
            "line_period_end": period[1].isoformat(),
            "amount": _number(amount),
        }


def invoice_rows(document: InvoiceDocument) -> list[dict[str, str]]:
    """The CSV rows of one invoice, as `CSV_COLUMNS` name them."""
    facts = {
        "invoice_number": document.number,
        "tenant": document.tenant_name,
        "tenant_slug": document.tenant_slug,
        "cost_center": document.cost_center,
        "period_start": document.period_start.isoformat(),
        "period_end": document.period_end.isoformat(),
        "issue_date": document.issue_date.isoformat(),
        "due_date": document.due_date.isoformat(),
        "currency": document.currency,
        "status": document.status,
        "tax_rate": _number(document.totals.tax_percent),
        "invoice_total": _number(document.totals.total),
        "credited": _number(document.credited),
        "net_total": _number(document.net_total),
        "paid": _number(document.paid),
        "balance_due": _number(document.balance_due),
    }
    lines = [_line_row(line) for line in document.lines + document.credit_lines]
    lines += list(_adjustment_rows(document))
    lines += [_line_row(line) for line in document.unpriced]
    return [{column: {**facts, **line}.get(column, "") for column in CSV_COLUMNS} for line in lines]


def write_invoices_csv(*, documents: Iterable[InvoiceDocument], out: IO[str]) -> None:
    """Write the invoices' rows, with a header, to the text stream `out`."""
    writer = csv_export.dict_writer(out, CSV_COLUMNS)
    writer.writeheader()
    for document in documents:
        writer.writerows(invoice_rows(document))


def invoices_csv(*, documents: Iterable[InvoiceDocument]) -> str:
    out = io.StringIO(newline="")
    write_invoices_csv(documents=documents, out=out)
    return out.getvalue()


def invoice_list_csv_rows(invoice: ExportInvoice, labels: dict[str, str]) -> list[list[str]]:
    """The CSV rows of one invoice of a list, as `invoice_rows` writes its document, from plain
    values (`labels` caches each resource class's label over the export)."""
    facts = [
        invoice.number,
        invoice.tenant_name,
        invoice.tenant_slug,
        invoice.cost_center,
        invoice.period_start.isoformat(),
        invoice.period_end.isoformat(),
        invoice.issue_date.isoformat(),
        invoice.due_date.isoformat(),
        invoice.currency,
        invoice.status,
    ]
    net = invoice.total - invoice.credited
    feet = [_number(invoice.tax_percent), _number(invoice.total), _number(invoice.credited),
            _number(net), _number(invoice.paid), _number(net - invoice.paid)]
    rows = []
    for _, kind, resource, start, end, hours, quantity, unit, price, amount in invoice.lines:
        label = labels.get(resource) or labels.setdefault(resource, class_label(resource))
        description = label if kind == "usage" else f"Downtime credit: {label}"
        line_period = (start.date().isoformat(), last_day(end).isoformat())
        numbers = (_number(hours), _number(quantity), unit, _number(price), _number(amount))
        rows.append([*facts, kind, resource, description, *line_period, *numbers, *feet])
    period = (invoice.period_start.isoformat(), invoice.period_end.isoformat())
    adjustments = []
    if invoice.discount:
        adjustments.append(("discount", f"Discount {invoice.discount_percent} %", invoice.discount))
    if invoice.tax_percent is not None:
        adjustments.append(("tax", f"Tax {invoice.tax_percent} %", invoice.tax))
    for line_type, description, amount in adjustments:
        no_quantity = ("", "", "", "")
        rows.append(
            [*facts, line_type, "", description, *period, *no_quantity, _number(amount), *feet]
        )
    for item in invoice.unpriced:
        resource = item["resource"]
        label = item.get("label") or class_label(resource)
        description = f"{label}: not billed, {item['reason']}"
        line_period = (
            datetime.fromisoformat(item["period_start"]).date().isoformat(),
            last_day(datetime.fromisoformat(item["period_end"])).isoformat(),
        )
        numbers = (_number(Decimal(item["quantity_hours"])), "", "hour", "", "")
        rows.append([*facts, "unpriced", resource, description, *line_period, *numbers, *feet])
    return rows


# XLSX

_HEADER_FONT = Font(bold=True, color="FFFFFF")
_HEADER_FILL = PatternFill("solid", fgColor="334E68")
_BOLD = Font(bold=True)
DATE_FORMAT = "yyyy-mm-dd"
QUANTITY_FORMAT = "#,##0.000000"
PERCENT_FORMAT = '0.00" %"'
UNIT_PRICE_FORMAT = "#,##0.00####"
SUMMARY_COLUMNS = (
    ("Invoice", 20),
    ("Tenant", 28),
    ("Tenant slug", 16),
    ("Cost center", 16),
    ("Period start", 12),
    ("Period end", 12),
    ("Issue date", 12),
    ("Due date", 12),
    ("Currency", 9),
    ("Status", 10),
    ("Subtotal", 16),
    ("Discount", 16),
    ("Tax", 16),
    ("Total", 16),
    ("Credited", 16),
    ("Net total", 16),
    ("Paid", 16),
    ("Balance due", 16),
)
LINE_COLUMNS = (
    ("Type", 10),
    ("Resource class", 30),
    ("Description", 44),
    ("From", 12),
    ("To", 12),
    ("Quantity (hours)", 18),
    ("Quantity", 16),
    ("Unit", 8),
    ("Unit price", 16),
    ("Amount", 16),
)


def money_format(currency: str) -> str:
    return f"#,##0.00 [${currency}];-#,##0.00 [${currency}]"


def _cell(
    sheet: WriteOnlyWorksheet,
    value,
    number_format: str = "",
    *,
    font: Font | None = None,
    fill: PatternFill | None = None,
    alignment: Alignment | None = None,
) -> WriteOnlyCell:
    cell = WriteOnlyCell(sheet)
    if isinstance(value, str):
        cell.value = ILLEGAL_CHARACTERS_RE.sub("", value)
        # openpyxl reads "=…" as a formula and "#N/A" as an error: text stays text.
        cell.data_type = "s"
    else:
        cell.value = value
    if number_format and value is not None:
        cell.number_format = number_format
    if font is not None:
        cell.font = font
    if fill is not None:
        cell.fill = fill
    if alignment is not None:
        cell.alignment = alignment
    return cell


def _start(sheet: WriteOnlyWorksheet, columns: tuple[tuple[str, int], ...], freeze: str) -> None:
    """Column widths and the frozen rows: a write-only sheet takes them before its first row."""
    for column, (_, width) in enumerate(columns, start=1):
        sheet.column_dimensions[get_column_letter(column)].width = width
    sheet.freeze_panes = freeze


def _header(sheet: WriteOnlyWorksheet, columns: tuple[tuple[str, int], ...]) -> list:
    return [_cell(sheet, title, font=_HEADER_FONT, fill=_HEADER_FILL) for title, _ in columns]


def _summary_row(sheet: WriteOnlyWorksheet, doc: InvoiceDocument) -> list:
    facts = _invoice_facts(doc, money_format(doc.currency))
    return [_cell(sheet, value, number_format) for value, number_format in facts]


def _sheet_title(number: str, taken: set[str]) -> str:
    # Excel's rules: at most 31 characters, none of []:*?/\, unique ignoring case.
    base = "".join("-" if ch in "[]:*?/\\" else ch for ch in number).strip("'")[:31] or "Invoice"
    title, suffix = base, 1
    while title.lower() in taken:
        suffix += 1
        title = f"{base[: 31 - len(str(suffix)) - 1]}~{suffix}"
    taken.add(title.lower())
    return title


_LEFT = Alignment(horizontal="left")


def _invoice_sheet(sheet: WriteOnlyWorksheet, doc: InvoiceDocument) -> None:
    money = money_format(doc.currency)
    facts = (
        ("Invoice", doc.number, ""),
        ("Tenant", f"{doc.tenant_name} ({doc.tenant_slug})", ""),
        ("Cost center", doc.cost_center, ""),
        ("Period start", doc.period_start, DATE_FORMAT),
        ("Period end", doc.period_end, DATE_FORMAT),
        ("Issue date", doc.issue_date, DATE_FORMAT),
        ("Due date", doc.due_date, DATE_FORMAT),
        ("Status", doc.status, ""),
    )
    _start(sheet, LINE_COLUMNS, freeze=f"A{len(facts) + 3}")
    for label, value, number_format in facts:
        sheet.append(
            [_cell(sheet, label, font=_BOLD), _cell(sheet, value, number_format, alignment=_LEFT)]
        )
    sheet.append([])
    sheet.append(_header(sheet, LINE_COLUMNS))
    for line in doc.lines + doc.credit_lines + doc.unpriced:
        sheet.append([_cell(sheet, value, number_format)
                      for value, number_format in _line_values(line, money)])
    totals = doc.totals
    feet = [("Subtotal", totals.subtotal)]
    if totals.discount:
        feet.append((f"Discount {totals.discount_percent} %", totals.discount))
    if totals.tax_percent is not None:
        feet.append((f"Tax {totals.tax_percent} %", totals.tax))
    feet.append(("Total", totals.total))
    feet += [(_settlement_label(item), -item.amount) for item in doc.settlement]
    if doc.credited or doc.paid:
        feet.append(("Balance due", doc.balance_due))
    sheet.append([])
    for label, amount in feet:
        sheet.append(
            [None] * 8
            + [
                _cell(sheet, label, font=_BOLD),
                _cell(sheet, amount, money,
                      font=_BOLD if label in ("Total", "Balance due") else None),
            ]
        )


def _settlement_label(item: SettlementLine) -> str:
    """How a credit note or a payment is named after an invoice's total."""
    if item.kind == "credit_note":
        return f"Credit note {item.reference} ({item.date:%Y-%m-%d})"
    reference = f", {item.reference}" if item.reference else ""
    return f"Payment {item.date:%Y-%m-%d}{reference}"


def write_invoices_xlsx(*, documents: Iterable[InvoiceDocument], out: IO[bytes]) -> None:
    """A workbook: a summary sheet with a row per invoice, then a sheet per invoice, written
    to the binary file `out` as the documents come.

    Write-only: each sheet's rows go to its own temporary file as they are appended (and an
    invoice's sheet is closed once written), so memory holds one invoice at a time however
    many are exported; the workbook is zipped into `out` at the end.
    """
    workbook = Workbook(write_only=True)
    summary = workbook.create_sheet("Summary")
    _start(summary, SUMMARY_COLUMNS, freeze="A2")
    summary.append(_header(summary, SUMMARY_COLUMNS))
    taken = {"summary"}
    for doc in documents:
        summary.append(_summary_row(summary, doc))
        sheet = workbook.create_sheet(_sheet_title(doc.number, taken))
        _invoice_sheet(sheet, doc)
        sheet.close()
    workbook.save(out)


# The list's workbook: "Invoices" and "Lines", written cheaply. A cell whose value needs no
# style is appended as the plain value (openpyxl reuses one cell object for those); a styled
# cell copies its column's style array, built once per workbook, instead of looking its number
# format, font and fill up cell by cell (that lookup was most of the CPU of a large export).
LIST_LINE_COLUMNS = (
    ("Invoice", 20),
    ("Tenant", 28),
    ("Tenant slug", 16),
    ("Period start", 12),
    ("Period end", 12),
    ("Currency", 9),
    *LINE_COLUMNS,
)


class _Styles:
    """The style arrays of one workbook, one per (number format, bold): a cell built from one
    is as styled as if its format had been set on it, at the cost of copying nine ints."""

    def __init__(self, sheet: WriteOnlyWorksheet) -> None:
        self._sheet = sheet
        self._arrays: dict[tuple[str, bool], object] = {}

    def array(self, number_format: str, *, header: bool = False):
        key = (number_format, header)
        if key not in self._arrays:
            prototype = _cell(self._sheet, "", number_format)
            if header:
                prototype.font, prototype.fill = _HEADER_FONT, _HEADER_FILL
            self._arrays[key] = prototype._style  # openpyxl has no public getter
        return self._arrays[key]

    def cell(self, sheet: WriteOnlyWorksheet, value, number_format: str) -> Cell | object:
        if value is None:
            return None
        if isinstance(value, str):
            return self.text(sheet, value)
        if not number_format:
            return value
        return Cell(sheet, 1, 1, value, style_array=self.array(number_format))

    def text(self, sheet: WriteOnlyWorksheet, value: str) -> Cell | str:
        """Text as text: openpyxl would store "=…" as a formula and "#N/A" as an error, so
        those (and only those) become cells typed as strings, in the text format "@"; other
        text goes in as the plain value. (Styled, so that openpyxl never reuses the cell
        object for the next plain value of its row: rows may share their invoice's cells.)"""
        value = ILLEGAL_CHARACTERS_RE.sub("", value)
        if value.startswith("=") or value in ERROR_CODES:
            cell = Cell(sheet, 1, 1, "", style_array=self.array("@"))
            cell.value, cell.data_type = value, "s"
            return cell
        return value


def _list_header(sheet: WriteOnlyWorksheet, styles: _Styles, columns) -> list[Cell]:
    array = styles.array("", header=True)
    cells = []
    for title, _ in columns:
        cell = Cell(sheet, 1, 1, style_array=array)
        cell.value = title
        cells.append(cell)
    return cells


def _invoice_facts(doc: InvoiceDocument, money: str) -> tuple:
    return (
        (doc.number, ""),
        (doc.tenant_name, ""),
        (doc.tenant_slug, ""),
        (doc.cost_center, ""),
        (doc.period_start, DATE_FORMAT),
        (doc.period_end, DATE_FORMAT),
        (doc.issue_date, DATE_FORMAT),
        (doc.due_date, DATE_FORMAT),
        (doc.currency, ""),
        (doc.status, ""),
        (doc.totals.subtotal, money),
        (doc.totals.discount, money),
        (doc.totals.tax, money),
        (doc.totals.total, money),
        (doc.credited, money),
        (doc.net_total, money),
        (doc.paid, money),
        (doc.balance_due, money),
    )


def _document_lines(doc: InvoiceDocument, money: str) -> Iterator[tuple]:
    """The rows of "Lines" for one invoice, in the CSV's order: lines, credits, the discount
    and the tax, then the usage shown but not billed."""
    for line in doc.lines + doc.credit_lines:
        yield _line_values(line, money)
    totals = doc.totals
    period = ((doc.period_start, DATE_FORMAT), (doc.period_end, DATE_FORMAT))
    if totals.discount:
        description = f"Discount {totals.discount_percent} %"
        yield (
            ("discount", ""),
            (None, ""),
            (description, ""),
            *period,
            *_NO_QUANTITY,
            (totals.discount, money),
        )
    if totals.tax_percent is not None:
        description = f"Tax {totals.tax_percent} %"
        yield (
            ("tax", ""),
            (None, ""),
            (description, ""),
            *period,
            *_NO_QUANTITY,
            (totals.tax, money),
        )
    for line in doc.unpriced:
        yield _line_values(line, money)


_NO_QUANTITY = ((None, ""), (None, ""), (None, ""), (None, ""))


def _line_values(line: DocumentLine, money: str) -> tuple:
    return (
        (line.line_type, ""),
        (line.resource_class, ""),
        (line.description, ""),
        (line.period_start, DATE_FORMAT),
        (line.period_end, DATE_FORMAT),
        (line.quantity_hours, QUANTITY_FORMAT),
        (line.quantity, QUANTITY_FORMAT),
        (line.unit, ""),
        (line.unit_price, UNIT_PRICE_FORMAT),
        (line.amount, money),
    )


def write_invoice_list_xlsx(*, documents: Iterable[InvoiceDocument], out: IO[bytes]) -> None:
    """The workbook of a list of invoices, "Invoices" (a row per invoice) and "Lines" (a row
    per line of each), written to the binary file `out` as the documents come.

    Write-only: each sheet's rows go to its own temporary file as they are appended, so memory
    holds one invoice at a time however many are exported; zipped into `out` at the end."""
    workbook = Workbook(write_only=True)
    invoices = workbook.create_sheet("Invoices")
    lines = workbook.create_sheet("Lines")
    styles = _Styles(invoices)
    _start(invoices, SUMMARY_COLUMNS, freeze="A2")
    _start(lines, LIST_LINE_COLUMNS, freeze="A2")
    invoices.append(_list_header(invoices, styles, SUMMARY_COLUMNS))
    lines.append(_list_header(lines, styles, LIST_LINE_COLUMNS))
    for doc in documents:
        money = money_format(doc.currency)
        facts = _invoice_facts(doc, money)
        invoices.append([styles.cell(invoices, value, fmt) for value, fmt in facts])
        # Number, tenant, slug, period and currency, as every line of the invoice repeats them.
        head = [
            styles.cell(lines, value, fmt) for value, fmt in (*facts[:3], *facts[4:6], facts[8])
        ]
        for values in _document_lines(doc, money):
            lines.append(head + [styles.cell(lines, value, fmt) for value, fmt in values])
    workbook.save(out)


def invoices_xlsx(*, documents: Iterable[InvoiceDocument]) -> bytes:
    out = io.BytesIO()
    write_invoices_xlsx(documents=documents, out=out)
    return out.getvalue()


# PDF

# Nothing an invoice shows needs a file or a URL: refuse them all (no SSRF, no local reads).
_NO_RESOURCES = ResourceAccessPolicy.server(allow_remote=False)
CENT = Decimal("0.01")


def _shown(value: Decimal) -> str:
    # A price: up to the 6 places it may carry, at least 2.
    whole, _, places = f"{value:,.6f}".partition(".")
    return f"{whole}.{places.rstrip('0').ljust(2, '0')}"


def _pdf_lines(lines: Iterable[DocumentLine]) -> list[dict[str, str]]:
    """The lines as the PDF prints them: whole GPUs first, then MIG and HAMi shares, then CPU,
    memory, storage and workloads; each quantity to two places in the unit its class counts
    in (GPU-hours, MIG instance-hours, GiB-months…), amounts in the invoice's currency."""
    ordered = sorted(lines, key=lambda line: (*class_order(line.resource_class),
                                              line.period_start, line.description))
    return [
        {
            "description": line.description,
            "period": f"{line.period_start.isoformat()} to {line.period_end.isoformat()}",
            "quantity": f"{_quantity(line).quantize(CENT, ROUND_HALF_UP):,.2f}",
            "unit": quantity_unit(line.resource_class, line.unit),
            "unit_price": "" if line.unit_price is None else _shown(line.unit_price),
            "amount": "" if line.amount is None else f"{line.amount:,.2f}",
        }
        for line in ordered
    ]


def _quantity(line: DocumentLine) -> Decimal:
    return line.quantity if line.quantity is not None else line.quantity_hours


def invoice_pdf_html(*, document: InvoiceDocument) -> str:
    """The invoice as the HTML the PDF is rendered from (also a print preview)."""
    currency, totals = document.currency, document.totals
    money = {
        name: f"{currency} {getattr(totals, name):,.2f}"
        for name in ("subtotal", "discount", "tax", "total")
    }
    context = {
        "document": document,
        "lines": _pdf_lines(document.lines),
        "credit_lines": _pdf_lines(document.credit_lines),
        "unpriced": _pdf_lines(document.unpriced),
        "totals": {
            **money,
            "discount": money["discount"] if totals.discount else "",
            "tax": money["tax"] if totals.tax_percent is not None else "",
            "discount_percent": totals.discount_percent,
            "tax_percent": totals.tax_percent,
        },
        # After the totals: each credit note and payment, and what is left to pay.
        "settlement": [
            {"label": _settlement_label(item),
             "description": item.description if item.kind == "credit_note" else "",
             "amount": f"-{currency} {item.amount:,.2f}"}
            for item in document.settlement
        ],
        "settled": bool(document.credited or document.paid),
        "net_total": f"{currency} {document.net_total:,.2f}",
        "balance_due": f"{currency} {document.balance_due:,.2f}",
        "refund_owed": (f"{currency} {-document.balance_due:,.2f}"
                        if document.balance_due < 0 else ""),
    }
    return render_to_string("billing/invoice_pdf.html", context)


def invoice_pdf(*, document: InvoiceDocument) -> bytes:
    """The invoice as a PDF document."""
    out = io.BytesIO()
    status = pisa.CreatePDF(
        invoice_pdf_html(document=document),
        dest=out,
        encoding="utf-8",
        resource_policy=_NO_RESOURCES,
    )
    if status.err:
        raise RuntimeError(f"The invoice PDF could not be rendered ({status.err} errors).")
    return out.getvalue()
