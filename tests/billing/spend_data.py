"""Rows the tenant-spend and quote tests make: rates, hourly usage, invoices."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from billing.models import Invoice, InvoiceLine, Rate, UsageRecord

H100 = "gpu:nvidia-h100-80gb"
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)


def rate(resource: str, price: str, *, unit: str = "hour", start=EPOCH, end=None) -> Rate:
    return Rate.objects.create(resource=resource, unit_price=Decimal(price), unit=unit,
                               valid_from=start, valid_to=end)


def usage(tenant, resource: str, hour: datetime, seconds: int, *, source="allocated",
          hostname="") -> UsageRecord:
    return UsageRecord.objects.create(tenant=tenant, resource=resource, hour=hour,
                                      unit_seconds=seconds, source=source, hostname=hostname)


def issued_invoice(tenant, *, number: str, month: datetime, total: str = "12.50",
                   status: str = "issued") -> Invoice:
    """An invoice with one line, issued (or paid, void) the way the model allows: lines are
    written while it is a draft, then only its lifecycle moves."""
    end = (month + timedelta(days=32)).replace(day=1)
    invoice = Invoice.objects.create(
        tenant=tenant, period_start=month, period_end=end, tenant_name=tenant.name,
        currency="EUR", subtotal=Decimal(total), total=Decimal(total), number=number,
        issue_date=end.date(), due_date=(end + timedelta(days=30)).date(),
    )
    InvoiceLine.objects.create(
        invoice=invoice, resource=H100, description="NVIDIA H100 80GB GPUs",
        period_start=month, period_end=end, unit_seconds=18000,
        quantity_hours=Decimal("5"), quantity=Decimal("5"), unit="hour",
        unit_price=Decimal("2.50"), amount=Decimal(total),
    )
    if status != "draft":
        Invoice.objects.filter(pk=invoice.pk).update(status=status)
    invoice.refresh_from_db()
    return invoice
