"""Invoices as XLSX workbooks: one invoice as it reads, a list to filter and pivot."""

import io
from collections.abc import Iterable, Iterator
from typing import IO

from openpyxl import Workbook
from openpyxl.cell.cell import ERROR_CODES, ILLEGAL_CHARACTERS_RE, Cell, WriteOnlyCell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

from ..documents import DocumentLine, InvoiceDocument

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
    feet += [(item.label, -item.amount) for item in doc.settlement]
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
