"""Invoices as people may see them, and as the exports read them.

Finance and platform admins see every invoice; a tenant's members see their tenants' invoices
once issued (drafts are finance's working copies). Missing and forbidden are the same 404.
"""

from datetime import date, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone

from tenants.access import access_for

from .. import calculations, documents
from ..calculations.invoicing import class_label
from ..models import Invoice, InvoiceLine, InvoiceStatus


def invoices_visible_to(user) -> QuerySet[Invoice]:
    """The invoices `user` may read, with their tenant joined."""
    access = access_for(user)
    invoices = Invoice.objects.select_related("tenant")
    if access.sees_all_tenants:
        return invoices
    return invoices.filter(tenant_id__in=list(access.tenant_roles)).exclude(
        status=InvoiceStatus.DRAFT
    )


def invoice_get_for_user(*, user, invoice_id: int) -> Invoice:
    """The invoice `invoice_id` if `user` may see it, else 404."""
    return get_object_or_404(invoices_visible_to(user), pk=invoice_id)


def _line(line: InvoiceLine) -> calculations.InvoiceLine:
    return calculations.InvoiceLine(
        kind=line.kind,
        resource=line.resource,
        label=class_label(line.resource),
        period_start=line.period_start,
        period_end=line.period_end,
        unit_seconds=line.unit_seconds,
        quantity_hours=line.quantity_hours,
        quantity=line.quantity,
        unit=line.unit,
        unit_price=line.unit_price,
        amount=line.amount,
    )


def _unpriced(item: dict) -> calculations.UnpricedUsage:
    return calculations.UnpricedUsage(
        resource=item["resource"],
        label=item.get("label") or class_label(item["resource"]),
        reason=item["reason"],
        period_start=datetime.fromisoformat(item["period_start"]),
        period_end=datetime.fromisoformat(item["period_end"]),
        unit_seconds=int(item["unit_seconds"]),
        quantity_hours=Decimal(item["quantity_hours"]),
    )


def invoice_computation(*, invoice: Invoice) -> calculations.InvoiceComputation:
    """The stored invoice as the calculations describe one (lines as stored, never recomputed).

    Uses `invoice.lines.all()`, so a caller listing many invoices prefetches `lines`.
    """
    lines = sorted(invoice.lines.all(), key=lambda line: (line.position, line.pk))
    return calculations.InvoiceComputation(
        period_start=invoice.period_start,
        period_end=invoice.period_end,
        lines=tuple(_line(line) for line in lines if line.kind == InvoiceLine.Kind.USAGE),
        credit_lines=tuple(_line(line) for line in lines if line.kind == InvoiceLine.Kind.CREDIT),
        unpriced=tuple(_unpriced(item) for item in invoice.unpriced or []),
        subtotal=invoice.subtotal,
        discount_percent=invoice.discount_percent,
        discount=invoice.discount,
        tax_percent=invoice.tax_percent,
        tax=invoice.tax,
        total=invoice.total,
    )


def invoice_document(*, invoice: Invoice) -> documents.InvoiceDocument:
    """What the exports render for `invoice`: as issued, or a draft as it stands (numbered
    "DRAFT", dated today)."""
    issue_date: date = invoice.issue_date or timezone.localdate()
    due_date: date = invoice.due_date or issue_date + timedelta(
        days=settings.BILLING_PAYMENT_TERMS_DAYS
    )
    return documents.invoice_document(
        computation=invoice_computation(invoice=invoice),
        number=invoice.number or "DRAFT",
        tenant_name=invoice.tenant_name,
        tenant_slug=invoice.tenant.slug,
        cost_center=invoice.cost_center,
        issue_date=issue_date,
        due_date=due_date,
        currency=invoice.currency or settings.BILLING_CURRENCY,
        status=invoice.status,
    )


def invoice_documents(*, invoices: QuerySet[Invoice]) -> list[documents.InvoiceDocument]:
    """The documents of many invoices (an export of a filtered list) in three queries."""
    rows = invoices.select_related("tenant").prefetch_related(
        Prefetch("lines", queryset=InvoiceLine.objects.order_by("position", "pk"))
    )
    return [invoice_document(invoice=invoice) for invoice in rows]
