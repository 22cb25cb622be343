"""Billing's events reach webhooks once each, from their real triggers: a budget alert (the
higher threshold, as the mail) and an issued invoice."""

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from billing.models import Rate, UsageRecord
from billing.services import invoicing
from billing.services.accounts import billing_account_update
from billing.services.budgets import budget_alerts_send
from tests.support.webhooks import hook_for, owed

pytestmark = pytest.mark.django_db
H100 = "gpu:nvidia-h100-80gb"


@pytest.fixture
def hours(tenant):
    Rate.objects.create(resource=H100, unit_price=Decimal("2.50"),
                        valid_from=datetime(2025, 1, 1, tzinfo=UTC))
    UsageRecord.objects.bulk_create(
        UsageRecord(tenant=tenant, source="allocated", resource=H100,
                    hour=datetime(2026, 3, 1, n, tzinfo=UTC), unit_seconds=3600)
        for n in range(20))  # 50.00


def test_a_budget_alert_is_told_once(tenant, other_tenant, tenant_owner, platform_admin, hours):
    hook_for(tenant, url="https://hooks.example.com/acme", events=["budget.alert"])
    hook_for(other_tenant, url="https://hooks.example.com/globex")
    billing_account_update(actor=platform_admin, tenant=tenant, monthly_budget=Decimal("50"))
    now = datetime(2026, 3, 20, 12, tzinfo=UTC)
    assert budget_alerts_send(now=now) == 2  # 80 and 100 % at once: one mail, one event
    assert budget_alerts_send(now=now) == 0
    [payload] = owed("budget.alert")
    assert payload["type"] == "budget.alert"
    assert payload["data"] | {"url": ""} == {
        "threshold": 100, "spent": "50.00", "budget": "50.00", "currency": "EUR",
        "month": "2026-03", "url": "", "tenant": {"slug": "acme", "name": "Acme Labs"}}


def test_an_issued_invoice_is_told_once(tenant, finance, hours):
    hook_for(tenant, url="https://hooks.example.com/acme", events=["invoice.issued"])
    draft = invoicing.invoice_compute(tenant=tenant, month=date(2026, 3, 1))
    assert owed("invoice.issued") == []  # a draft is nobody's business yet
    invoicing.invoice_issue(invoice_id=draft.pk, actor=finance, issue_date=date(2026, 4, 2))
    [payload] = owed("invoice.issued")
    invoice = payload["data"]["invoice"]
    assert (invoice["number"], invoice["total"], invoice["month"]) == (
        "INV-2026-0001", "50.00", "2026-03")
    assert payload["data"]["url"].endswith("/billing/t/acme/")
