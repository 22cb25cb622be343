"""Budget alerts: 80 % and 100 % of a tenant's monthly budget, each once per month, mailed to
its owners through the outbox, in a number of queries that does not grow with the tenants."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing.models import BudgetAlert, Rate, UsageRecord
from billing.services.accounts import billing_account_update
from billing.services.budgets import budget_alerts_send
from billing.tasks import budget_alerts_task, invoices_month_end_task
from core.models import AuditEvent, OutboxEmail
from tenants.models import Membership
from tests.factories import MembershipFactory, TenantFactory, UserFactory

H100 = "gpu:nvidia-h100-80gb"
NOW = datetime(2026, 3, 20, 12, tzinfo=UTC)


@pytest.fixture(autouse=True)
def rate(db):
    # 2.50 per GPU-hour: 32 GPU-hours = 80.00, 40 GPU-hours = 100.00.
    return Rate.objects.create(
        resource=H100, unit_price=Decimal("2.50"), valid_from=datetime(2025, 1, 1, tzinfo=UTC)
    )


def use_gpu_hours(tenant, hours: int, *, start: datetime) -> None:
    first = UsageRecord.objects.filter(tenant=tenant).count()
    UsageRecord.objects.bulk_create(
        UsageRecord(
            tenant=tenant, source="allocated", resource=H100,
            hour=start + timedelta(hours=first + n), unit_seconds=3600,
        )
        for n in range(hours)
    )


def with_budget(tenant, budget: str, platform_admin):
    billing_account_update(actor=platform_admin, tenant=tenant, monthly_budget=Decimal(budget))


def test_80_then_100_percent_each_alerted_once_a_month(tenant, tenant_owner, tenant_member,
                                                        platform_admin):
    with_budget(tenant, "100", platform_admin)
    march = datetime(2026, 3, 1, tzinfo=UTC)
    use_gpu_hours(tenant, 31, start=march)  # 77.50: below 80 %

    assert budget_alerts_send(now=NOW) == 0
    use_gpu_hours(tenant, 1, start=march)  # 80.00
    assert budget_alerts_send(now=NOW) == 1
    assert budget_alerts_send(now=NOW) == 0  # once a month
    use_gpu_hours(tenant, 8, start=march)  # 100.00
    assert budget_alerts_send(now=NOW) == 1
    assert budget_alerts_send(now=NOW + timedelta(days=5)) == 0

    alerts = list(BudgetAlert.objects.values_list("threshold", "spent", "budget", "month"))
    assert alerts == [
        (80, Decimal("80.00"), Decimal("100.00"), march.date()),
        (100, Decimal("100.00"), Decimal("100.00"), march.date()),
    ]
    mails = list(OutboxEmail.objects.order_by("id"))
    assert [(m.topic, m.to) for m in mails] == [
        ("budget_alert.80", ["owner@example.com"]),  # the owner, not the member
        ("budget_alert.100", ["owner@example.com"]),
    ]
    assert mails[0].subject == "Acme Labs has used 80 % of its monthly budget for March 2026"
    assert "80.00 EUR of its 100.00 EUR monthly budget" in mails[0].body
    assert "http://127.0.0.1:8000/billing/" in mails[0].body
    assert "The budget is used up" in mails[1].body
    assert AuditEvent.objects.filter(action="budget.alert", tenant_slug="acme").count() == 2


def test_a_new_month_alerts_again(tenant, tenant_owner, platform_admin):
    with_budget(tenant, "100", platform_admin)
    use_gpu_hours(tenant, 32, start=datetime(2026, 3, 1, tzinfo=UTC))
    assert budget_alerts_send(now=NOW) == 1

    UsageRecord.objects.all().delete()
    use_gpu_hours(tenant, 32, start=datetime(2026, 4, 1, tzinfo=UTC))

    assert budget_alerts_send(now=datetime(2026, 4, 10, tzinfo=UTC)) == 1
    assert sorted(BudgetAlert.objects.values_list("month__month", flat=True)) == [3, 4]


def test_past_both_thresholds_at_once_records_both_and_mails_once(
    tenant, tenant_owner, platform_admin
):
    with_budget(tenant, "50", platform_admin)
    use_gpu_hours(tenant, 32, start=datetime(2026, 3, 1, tzinfo=UTC))  # 80.00 of 50: 160 %

    assert budget_alerts_send(now=NOW) == 2

    assert set(BudgetAlert.objects.values_list("threshold", flat=True)) == {80, 100}
    assert list(OutboxEmail.objects.values_list("topic", flat=True)) == ["budget_alert.100"]
    assert "160 %" in OutboxEmail.objects.get().body


def test_no_budget_no_alert_and_a_suspended_tenant_none(tenant, tenant_owner, other_tenant,
                                                         platform_admin):
    use_gpu_hours(tenant, 100, start=datetime(2026, 3, 1, tzinfo=UTC))  # no budget set
    with_budget(other_tenant, "10", platform_admin)
    use_gpu_hours(other_tenant, 100, start=datetime(2026, 3, 1, tzinfo=UTC))
    other_tenant.status = other_tenant.Status.SUSPENDED
    other_tenant.save()

    assert budget_alerts_send(now=NOW) == 0
    assert not BudgetAlert.objects.exists() and not OutboxEmail.objects.exists()


def _tenants_with_budgets(count: int, platform_admin) -> None:
    for n in range(count):
        tenant = TenantFactory(slug=f"budget-{n}")
        MembershipFactory(tenant=tenant, role=Membership.Role.OWNER,
                          user=UserFactory(username=f"owner-{n}"))
        with_budget(tenant, "1000", platform_admin)
        use_gpu_hours(tenant, 2, start=datetime(2026, 3, 1, tzinfo=UTC))


@pytest.mark.parametrize("tenants", [2, 8])
def test_the_queries_do_not_grow_with_the_tenants(platform_admin, tenants):
    _tenants_with_budgets(tenants, platform_admin)

    with CaptureQueriesContext(connection) as queries:
        assert budget_alerts_send(now=NOW) == 0

    assert len(queries) == 4  # accounts, rate card, usage, alerts sent (no owners: none due)


def test_the_hourly_task_sends_the_alerts(tenant, tenant_owner, platform_admin):
    with_budget(tenant, "1", platform_admin)
    now = datetime.now(tz=UTC)
    use_gpu_hours(tenant, 1, start=now.replace(day=1, hour=0, minute=0, second=0, microsecond=0))

    assert budget_alerts_task() == 2
    assert budget_alerts_task() == 0


def test_the_month_end_task_drafts_last_months_invoices(tenant, other_tenant):
    now = datetime.now(tz=UTC)
    last_month = (now.replace(day=1) - timedelta(days=1)).replace(
        day=1, hour=0, minute=0, second=0, microsecond=0
    )
    use_gpu_hours(tenant, 3, start=last_month)  # 7.50
    use_gpu_hours(other_tenant, 1, start=last_month)  # 2.50

    assert invoices_month_end_task() == 2
    assert invoices_month_end_task() == 2  # again: the same drafts, recomputed

    from billing.models import Invoice

    drafts = Invoice.objects.order_by("tenant_name")
    assert [(i.tenant_name, i.total, i.status) for i in drafts] == [
        ("Acme Labs", Decimal("7.50"), "draft"), ("Globex Corp", Decimal("2.50"), "draft"),
    ]


def test_beat_runs_the_month_end_drafts_on_the_1st_and_the_alerts_hourly(settings):
    from portal.celery import app

    month_end = settings.CELERY_BEAT_SCHEDULE["billing-invoices-month-end"]
    hourly = settings.CELERY_BEAT_SCHEDULE["billing-budget-alerts-hourly"]

    assert month_end["task"] in app.tasks and hourly["task"] in app.tasks
    assert month_end["schedule"].day_of_month == {1}
    assert month_end["schedule"].hour == {3} and len(hourly["schedule"].hour) == 24
