"""Invoice downloads, for the finance pages and the API alike: one invoice as CSV, XLSX or PDF;
a filtered list as CSV (streamed, one row per line) or XLSX (a summary sheet and a sheet per
invoice). Rendered by `billing.exports` from `billing.selectors.invoices.invoice_document`."""

import io
from collections.abc import Iterable, Iterator

from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from django.utils import timezone

from portal import csv_export

from . import exports
from .models import Invoice
from .selectors.invoices import invoice_document, invoice_documents

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pdf": "application/pdf",
}


def _filename_of(invoice: Invoice) -> str:
    if invoice.number:
        return invoice.number
    return f"draft-{invoice.tenant.slug}-{invoice.period_start:%Y-%m}"


def attachment(body: bytes | str, *, fmt: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    response["Cache-Control"] = "no-store"
    return response


def invoice_file(*, invoice: Invoice, fmt: str) -> HttpResponse:
    """One invoice as a CSV, XLSX or PDF download (the page's and the API's)."""
    document = invoice_document(invoice=invoice)
    if fmt == "csv":
        body = exports.invoices_csv(documents=[document])
    elif fmt == "xlsx":
        body = exports.invoices_xlsx(documents=[document])
    else:
        body = exports.invoice_pdf(document=document)
    return attachment(body, fmt=fmt, filename=_filename_of(invoice))


def _csv_chunks(invoices: Iterable[Invoice]) -> Iterator[str]:
    out = io.StringIO(newline="")
    writer = csv_export.dict_writer(out, exports.CSV_COLUMNS)
    writer.writeheader()
    for invoice in invoices:
        writer.writerows(exports.invoice_rows(invoice_document(invoice=invoice)))
        yield out.getvalue()
        out.seek(0)
        out.truncate(0)
    yield out.getvalue()


def invoices_file(*, invoices: QuerySet[Invoice], fmt: str) -> HttpResponse:
    """A filtered list of invoices: CSV streamed (one row per line), or an XLSX workbook."""
    filename = f"invoices-{timezone.now():%Y-%m-%d}"
    if fmt == "csv":
        response = StreamingHttpResponse(
            _csv_chunks(invoices.prefetch_related("lines").iterator(chunk_size=200)),
            content_type=CONTENT_TYPES["csv"],
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
        response["Cache-Control"] = "no-store"
        return response
    body = exports.invoices_xlsx(documents=invoice_documents(invoices=invoices))
    return attachment(body, fmt=fmt, filename=filename)
