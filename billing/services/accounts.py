"""Billing accounts: each tenant's monthly budget and discount."""

from decimal import Decimal
from typing import Any

from django.db import transaction

from core.audit import audit
from tenants.models import Tenant

from ..models import BillingAccount


def billing_account_for(*, tenant: Tenant) -> BillingAccount:
    """The tenant's billing account; a tenant never billed before gets one with no budget."""
    account, _ = BillingAccount.objects.get_or_create(tenant=tenant)
    return account


@transaction.atomic
def billing_account_update(
    *,
    actor: Any | None,
    tenant: Tenant,
    monthly_budget: Decimal | None = None,
    discount_percent: Decimal | None = None,
) -> BillingAccount:
    """Set the tenant's budget and/or discount (validated; audited with before and after)."""
    account = billing_account_for(tenant=tenant)
    account = BillingAccount.objects.select_for_update().get(pk=account.pk)
    before = {
        "monthly_budget": str(account.monthly_budget),
        "discount_percent": str(account.discount_percent),
    }
    if monthly_budget is not None:
        account.monthly_budget = Decimal(monthly_budget)
    if discount_percent is not None:
        account.discount_percent = Decimal(discount_percent)
    account.full_clean()
    account.save()
    after = {
        "monthly_budget": str(account.monthly_budget),
        "discount_percent": str(account.discount_percent),
    }
    audit(
        actor=actor,
        action="billing_account.update",
        obj=account,
        tenant=tenant,
        changes={"before": before, "after": after},
    )
    return account
