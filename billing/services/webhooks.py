"""Billing's events for webhooks (tenants.webhooks): a budget alert, an issued invoice. Called
inside the transaction of what happened, like the mail about it."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.conf import settings
from django.urls import reverse

from tenants.models import Tenant
from tenants.webhooks.services import webhook_event_emit

from ..models import Invoice


def _spend_page(tenant: Tenant) -> str:
    return f"{settings.PORTAL_URL}{reverse('billing:tenant-spend', args=[tenant.slug])}"


def budget_alert_webhook(*, tenant: Tenant, threshold: int, spent: Decimal, budget: Decimal,
                         month: date) -> None:
    webhook_event_emit(event_type="budget.alert", tenant=tenant, data={
        "threshold": threshold, "spent": str(spent), "budget": str(budget),
        "currency": settings.BILLING_CURRENCY, "month": f"{month:%Y-%m}",
        "url": _spend_page(tenant)})


def invoice_issued_webhook(*, invoice: Invoice) -> None:
    webhook_event_emit(event_type="invoice.issued", tenant=invoice.tenant, data={
        "invoice": {"id": invoice.pk, "number": invoice.number, "total": str(invoice.total),
                    "currency": invoice.currency, "month": f"{invoice.period_start:%Y-%m}",
                    "issue_date": invoice.issue_date.isoformat(),
                    "due_date": invoice.due_date.isoformat()},
        "url": _spend_page(invoice.tenant)})
