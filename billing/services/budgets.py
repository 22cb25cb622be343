"""Budget alerts: a tenant's owners are told when the month's spend reaches 80 % and 100 % of
its budget, each once per month.

One pass for every tenant with a budget, in a bounded number of queries (the spend of all of
them is priced together); each alert is its own small transaction holding the `BudgetAlert`
row (unique per tenant, month and threshold: a second run, or two at once, never mails
twice) and the mail in the outbox, sent after commit.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from django.conf import settings
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse

from core.audit import audit
from core.outbox import email_enqueue
from tenants.access import tenant_owner_emails
from tenants.models import Tenant

from .. import calculations
from ..calculations.money import round_to
from ..models import BillingAccount, BudgetAlert
from ..selectors.usage import MonthSpend, month_spend
from .webhooks import budget_alert_webhook

SUBJECT = "{tenant} has used {threshold} % of its monthly budget for {month:%B %Y}"


def _alert(
    *,
    tenant: Tenant,
    threshold: int,
    budget: Decimal,
    spend: MonthSpend,
    owners: list[str],
    now: datetime,
    mail: bool = True,
) -> bool:
    month = spend.month_start.date()
    with transaction.atomic():
        alert, created = BudgetAlert.objects.get_or_create(
            tenant=tenant,
            month=month,
            threshold=threshold,
            defaults={"spent": spend.spent, "budget": budget, "sent_at": now},
        )
        if not created:
            return False  # another run got there first
        audit(
            actor=None,
            action="budget.alert",
            obj=alert,
            tenant=tenant,
            changes={
                "threshold": threshold,
                "spent": str(spend.spent),
                "budget": str(budget),
                "month": f"{month:%Y-%m}",
                "to": sorted(owners) if mail else [],
            },
        )
        if not mail:
            return True
        budget_alert_webhook(tenant=tenant, threshold=threshold, spent=spend.spent,
                             budget=budget, month=month)
        forecast = calculations.month_forecast(
            spend.spent, now=now, month_start=spend.month_start, month_end=spend.month_end
        )
        body = render_to_string(
            "billing/email/budget_alert.txt",
            {
                "tenant": tenant,
                "spent": spend.spent,
                "budget": budget,
                "currency": settings.BILLING_CURRENCY,
                "month": spend.month_start,
                "threshold": threshold,
                "percent": round_to(Fraction(spend.spent) * 100 / Fraction(budget), Decimal("1")),
                "forecast": forecast,
                "link": f"{settings.PORTAL_URL}{reverse('billing:tenant')}",
                "thresholds": " and ".join(map(str, calculations.ALERT_THRESHOLDS)),
            },
        )
        email_enqueue(
            to=owners,
            subject=SUBJECT.format(
                tenant=tenant.name, threshold=threshold, month=spend.month_start
            ),
            body=body,
            topic=f"budget_alert.{threshold}",
        )
    return True


def budget_alerts_send(*, now: datetime) -> int:
    """Alert every tenant whose spend this month has reached a threshold not yet alerted;
    returns how many thresholds were recorded (each once per tenant and month)."""
    accounts = list(
        BillingAccount.objects.filter(
            monthly_budget__gt=0, tenant__status=Tenant.Status.ACTIVE
        ).select_related("tenant")
    )
    if not accounts:
        return 0
    spends = month_spend(tenant_ids=[account.tenant_id for account in accounts], now=now)
    month = next(iter(spends.values())).month_start.date()
    already: dict[int, set[int]] = {}
    for tenant_id, threshold in BudgetAlert.objects.filter(
        tenant_id__in=list(spends), month=month
    ).values_list("tenant_id", "threshold"):
        already.setdefault(tenant_id, set()).add(threshold)
    due = {
        account.tenant_id: calculations.budget_alerts_due(
            spent=spends[account.tenant_id].spent,
            budget=account.monthly_budget,
            already_sent=already.get(account.tenant_id, set()),
        )
        for account in accounts
    }
    owners = tenant_owner_emails(
        account.tenant.slug for account in accounts if due[account.tenant_id]
    )
    sent = 0
    for account in accounts:
        thresholds = due[account.tenant_id]
        for threshold in thresholds:
            # Past 80 and 100 % at once: both are recorded, one mail says the higher.
            sent += _alert(
                tenant=account.tenant,
                threshold=threshold,
                budget=account.monthly_budget,
                spend=spends[account.tenant_id],
                owners=owners.get(account.tenant.slug, []),
                now=now,
                mail=threshold == max(thresholds),
            )
    return sent
