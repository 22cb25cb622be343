"""The files of an issued invoice (PDF, CSV, XLSX), rendered once and kept in `InvoiceFile`.

What an issued invoice says never changes; only its status does (issued, paid, void), and
every format prints it. So a file is rendered when the invoice is issued, paid or voided (a
task queued by `billing.services.invoicing` after the commit), or at its first download
(an invoice issued before files were kept, a task that has not run yet), and served from the
table while the invoice's status and the layout are those it was rendered with. The files also
print its credit notes, payments and balance due: recording one deletes its kept files
(`billing.services.payments.files_outdated`), which are then rendered again. A draft's file is
always rendered live: it changes with every recomputation and prints today's date.
"""

from .. import exports
from ..exports import FILE_LAYOUT as LAYOUT
from ..models import Invoice, InvoiceFile, InvoiceStatus
from ..selectors.invoices import STORED_FILE, invoice_document

FORMATS = ("pdf", "csv", "xlsx")


def render(*, invoice: Invoice, fmt: str) -> bytes:
    """The invoice as a file of `fmt`, rendered now (its lines read if not prefetched)."""
    document = invoice_document(invoice=invoice)
    if fmt == "csv":
        return exports.invoices_csv(documents=[document]).encode()
    if fmt == "xlsx":
        return exports.invoices_xlsx(documents=[document])
    if fmt == "pdf":
        return exports.invoice_pdf(document=document)
    raise ValueError(f"No invoice file of format {fmt!r}.")


def _store(*, invoice: Invoice, fmt: str, body: bytes) -> None:
    """Keep `body` as the invoice's `fmt` file for its current status (one upsert: two
    downloads at once both write the same file)."""
    InvoiceFile.objects.bulk_create(
        [InvoiceFile(invoice_id=invoice.pk, fmt=fmt, status=invoice.status, layout=LAYOUT,
                     body=body)],
        update_conflicts=True,
        unique_fields=["invoice", "fmt"],
        update_fields=["status", "layout", "body", "rendered_at"],
    )


def invoice_file_body(*, invoice: Invoice, fmt: str) -> bytes:
    """The invoice's `fmt` file: a draft's rendered live; an issued (paid, void) invoice's
    served as kept, else rendered and kept for the next download."""
    if fmt not in FORMATS:
        raise ValueError(f"No invoice file of format {fmt!r}.")
    if invoice.status == InvoiceStatus.DRAFT:
        return render(invoice=invoice, fmt=fmt)
    if hasattr(invoice, STORED_FILE):  # read with it (`invoice_for_download`)
        stored = getattr(invoice, STORED_FILE)
    else:
        stored = (
            InvoiceFile.objects.filter(invoice_id=invoice.pk, fmt=fmt, status=invoice.status,
                                       layout=LAYOUT)
            .values_list("body", flat=True).first()
        )
    if stored is not None:
        return bytes(stored)
    body = render(invoice=invoice, fmt=fmt)
    _store(invoice=invoice, fmt=fmt, body=body)
    return body


def invoice_files_render(*, invoice_id: int) -> list[str]:
    """Render and keep every file of an issued (paid, void) invoice that is not current (the
    task after an issue, a payment or a void); returns the formats rendered. A draft, or an
    invoice gone, has none."""
    invoice = (
        Invoice.objects.select_related("tenant").prefetch_related("lines")
        .filter(pk=invoice_id).exclude(status=InvoiceStatus.DRAFT).first()
    )
    if invoice is None:
        return []
    current = set(
        InvoiceFile.objects.filter(invoice_id=invoice.pk, status=invoice.status, layout=LAYOUT)
        .values_list("fmt", flat=True)
    )
    rendered = []
    for fmt in FORMATS:
        if fmt not in current:
            _store(invoice=invoice, fmt=fmt, body=render(invoice=invoice, fmt=fmt))
            rendered.append(fmt)
    return rendered
