"""Invoices for finance's pages and API, computed by the services from usage made here.

Rates: H100 at 2.50 per GPU-hour, L40S at 1.00, from 2025-01-01 on. `bill(...)` records
`gpu_hours` of allocated H100 time in the month's first hours and computes the tenant's draft.
"""

from datetime import UTC, date, datetime
from decimal import Decimal

from billing.models import Invoice, Rate, UsageRecord
from billing.services import invoicing
from tests.factories import TenantFactory

H100 = "gpu:nvidia-h100-80gb"
L40S = "gpu:nvidia-l40s"
JAN, FEB = date(2026, 1, 1), date(2026, 2, 1)


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def rates() -> None:
    Rate.objects.get_or_create(resource=H100, defaults={
        "unit_price": Decimal("2.50"), "valid_from": utc(2025, 1, 1)})
    Rate.objects.get_or_create(resource=L40S, defaults={
        "unit_price": Decimal("1.00"), "valid_from": utc(2025, 1, 1)})


def bill(tenant, month: date, gpu_hours: int, *, resource: str = H100) -> Invoice:
    """`tenant`'s draft for `month`, `gpu_hours` GPU-hours of `resource` (up to 8 an hour)."""
    rates()
    hour, left = 0, gpu_hours
    while left > 0:
        gpus = min(left, 8)
        UsageRecord.objects.create(
            tenant=tenant, source=UsageRecord.Source.ALLOCATED, resource=resource,
            hour=utc(month.year, month.month, 1 + hour // 24, hour % 24),
            unit_seconds=gpus * 3600,
        )
        hour, left = hour + 1, left - gpus
    return invoicing.invoice_compute(tenant=tenant, month=month)


def tenant_with_cost_center(slug: str, name: str, cost_center: str):
    tenant = TenantFactory(slug=slug, name=name)
    if tenant.cost_center != cost_center:
        type(tenant).objects.filter(pk=tenant.pk).update(cost_center=cost_center)
        tenant.refresh_from_db()
    return tenant
