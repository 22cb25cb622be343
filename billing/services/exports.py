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


@transaction.atomic
def cost_export_record(*, actor, what: str, tenant=None, changes: dict) -> None:
    """Record that `actor` exported a cost breakdown (`what`: "cost_breakdown") of `tenant`,
    or a month's billed usage as FOCUS ("focus")."""
    audit(actor=actor, action=f"billing.{what}_export", tenant=tenant, changes=changes)
