"""Invoices as CSV rows for accounting (see the package's docstring)."""

import io
from collections.abc import Iterable, Iterator
from datetime import datetime
from decimal import Decimal
from typing import IO

from core import csv_export

from ..calculations.invoicing import class_label
from ..documents import DocumentLine, ExportInvoice, InvoiceDocument, last_day

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
