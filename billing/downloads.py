"""Invoice downloads, for the finance pages and the API alike: one invoice as CSV, XLSX or PDF;
a filtered list as CSV (streamed, one row per line) or XLSX (an "Invoices" sheet, a row per
invoice, and a "Lines" sheet, a row per line). Rendered by `billing.exports` from
`billing.selectors.invoices.invoice_document`."""

import io
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO

from django.db.models import QuerySet
from django.http import FileResponse, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.utils import timezone

from core import csv_export

from . import exports
from .documents import InvoiceDocument
from .models import Invoice
from .selectors.invoices import invoice_documents, invoice_export_values
from .services import invoice_files

# A streamed CSV is sent in pieces of about this many characters (not one per invoice).
CSV_CHUNK_CHARS = 64 * 1024
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
    """One invoice as a CSV, XLSX or PDF download (the page's and the API's): an issued
    invoice's file as kept once rendered, a draft's rendered now."""
    body = invoice_files.invoice_file_body(invoice=invoice, fmt=fmt)
    return attachment(body, fmt=fmt, filename=_filename_of(invoice))


def _csv_chunks(invoices: QuerySet[Invoice]) -> Iterator[str]:
    """The list's CSV in pieces of about `CSV_CHUNK_CHARS`, written from plain values."""
    out = io.StringIO(newline="")
    writer = csv_export.writer(out)
    writer.writerow(exports.CSV_COLUMNS)
    labels: dict[str, str] = {}
    for invoice in invoice_export_values(invoices=invoices):
        writer.writerows(exports.invoice_list_csv_rows(invoice, labels))
        if out.tell() >= CSV_CHUNK_CHARS:
            yield out.getvalue()
            out.seek(0)
            out.truncate(0)
    yield out.getvalue()


def _xlsx_file(documents: Iterable[InvoiceDocument], *, filename: str) -> FileResponse:
    """The workbook written to an anonymous temporary file (it is a zip: its directory comes
    last), then streamed from it; the file goes when the response is closed."""
    out = tempfile.TemporaryFile()  # noqa: SIM115 - the response closes it, once sent
    try:
        exports.write_invoice_list_xlsx(documents=documents, out=out)
        out.seek(0)
    except BaseException:
        out.close()
        raise
    response = FileResponse(
        out, as_attachment=True, filename=f"{filename}.xlsx", content_type=CONTENT_TYPES["xlsx"]
    )
    response["Cache-Control"] = "no-store"
    return response


def write_invoices(*, invoices: QuerySet[Invoice], fmt: str, out: IO[bytes]) -> None:
    """The list's CSV or XLSX written to the binary file `out` (a background export's)."""
    if fmt == "csv":
        for chunk in _csv_chunks(invoices):
            out.write(chunk.encode())
    elif fmt == "xlsx":
        exports.write_invoice_list_xlsx(documents=invoice_documents(invoices=invoices), out=out)
    else:
        raise ValueError(f"No invoice list export of format {fmt!r}.")


def invoices_file(*, invoices: QuerySet[Invoice], fmt: str) -> HttpResponseBase:
    """A filtered list of invoices, in memory bounded whatever their number: CSV streamed as
    it is written (one row per line), or an XLSX workbook written row by row to a
    temporary file and streamed from it."""
    filename = f"invoices-{timezone.now():%Y-%m-%d}"
    if fmt == "csv":
        response = StreamingHttpResponse(_csv_chunks(invoices), content_type=CONTENT_TYPES["csv"])
        response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
        response["Cache-Control"] = "no-store"
        return response
    return _xlsx_file(invoice_documents(invoices=invoices), filename=filename)
