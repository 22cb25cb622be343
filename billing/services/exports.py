"""Who exported which invoices: every download of invoice data leaves an audit event."""

from django.db import transaction

from core.audit import audit

from ..models import Invoice


@transaction.atomic
def invoices_export_record(
    *,
    actor,
    fmt: str,
    invoice: Invoice | None = None,
    invoice_count: int = 1,
    filters: dict[str, list[str]] | None = None,
) -> None:
    """Record that `actor` exported one invoice (on its trail) or a filtered list of them."""
    if invoice is not None:
        audit(actor=actor, action="invoice.export", obj=invoice, tenant=invoice.tenant,
              changes={"format": fmt})
        return
    audit(actor=actor, action="invoices.export",
          changes={"format": fmt, "invoices": invoice_count, "filters": filters or {}})
