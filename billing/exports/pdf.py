"""One invoice as a PDF: templates/billing/invoice_pdf.html through xhtml2pdf."""

import io
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal

from django.template.loader import render_to_string
from xhtml2pdf import pisa
from xhtml2pdf.config.resources import ResourceAccessPolicy

from ..calculations.invoicing import class_order, quantity_unit
from ..documents import DocumentLine, InvoiceDocument

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
            {"label": item.label,
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
