"""Issue 29, item 12: spend is live. "As of" is the last metered hour; this month's figure adds
what the running workloads held since then, priced at the current rate card and marked as an
estimate, so the forecast rises when a tenant launches; the chart's budget line never flattens
the spend line (a budget far above the spend is left off the chart and said in words)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from billing.calculations.money import month_start
from billing.models import BillingAccount, MeteringWindow
from billing.selectors.spend import tenant_spend
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus
from tests.factories import GPUFactory, NodeFactory, QuotaFactory

from .spend_data import H100, rate, usage

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 11, 14, 40, tzinfo=UTC)  # March has 744 hours; 10 days 14h40 gone


@pytest.fixture
def metered(tenant):
    """H100s at 2.50 an hour, vCPUs at 0.04; 4 GPU-hours metered on the 2nd (10.00); the meter
    finished every hour to 12:00 on the 11th (so it is as of 13:00)."""
    rate(H100, "2.50")
    rate("cpu", "0.04")
    usage(tenant, H100, datetime(2026, 3, 2, 10, tzinfo=UTC), 4 * 3600)
    for hour in range(10, 13):
        MeteringWindow.objects.create(source="allocated", hour=NOW.replace(hour=hour, minute=0),
                                      status="done")
    MeteringWindow.objects.create(source="allocated", hour=NOW.replace(hour=13, minute=0),
                                  status="pending")
    return tenant


def _running(tenant, name="chat", *, ready_at, demand=None, status=WorkloadStatus.READY):
    return Workload.objects.create(
        tenant=tenant, kind="inference", name=name, status=status, ready_at=ready_at,
        demand=demand or {H100: 2, "cpu": 8, "count:inference": 1},
    )


def test_as_of_is_the_last_metered_hour_and_running_workloads_add_an_estimate(metered):
    before = tenant_spend(tenant=metered, now=NOW)
    assert before.metered_through == NOW.replace(hour=13, minute=0)
    assert (before.spent, before.estimate, before.so_far, before.running) == (
        Decimal("10.00"), Decimal("0.00"), Decimal("10.00"), 0
    )

    # Ready since 09:00: billed by the meter up to 13:00, estimated from 13:00 to 14:40.
    _running(metered, ready_at=NOW.replace(hour=9, minute=0))
    # Ready at 14:10: estimated from then. Never ready, and deleted: nothing.
    _running(metered, "late", ready_at=NOW.replace(hour=14, minute=10), demand={H100: 1})
    _running(metered, "never", ready_at=None)
    _running(metered, "gone", ready_at=NOW - timedelta(days=1), status=WorkloadStatus.DELETED)

    after = tenant_spend(tenant=metered, now=NOW)
    # chat: (2 x 2.50 + 8 x 0.04) = 5.32 an hour for 100 minutes = 8.8666…; late: 2.50 for
    # 30 minutes = 1.25 → 10.1166… → 10.12
    assert after.estimate == Decimal("10.12")
    assert after.so_far == after.spent + after.estimate == Decimal("20.12")
    assert after.running == 2 and after.per_hour_now == Decimal("7.82")
    # The forecast rises at once: what runs now, kept running to month end (7.82 an hour for
    # the 489h20 left) on top of what is spent so far.
    hours_left = Decimal(489 * 60 + 20) / 60
    assert after.forecast == (Decimal("20.12") + Decimal("7.82") * hours_left).quantize(
        Decimal("0.01")
    )
    assert after.forecast > before.forecast
    today = {p.day.day: p for p in after.days}[11]
    assert today.spent == after.so_far and today.forecast is not None
    assert {p.day.day: p for p in after.days}[10].forecast is None
    assert {p.day.day: p for p in after.days}[31].forecast == after.forecast


def test_before_any_metered_hour_the_estimate_runs_from_when_workloads_became_ready(tenant):
    rate(H100, "2.00")
    now = datetime(2026, 3, 1, 3, 0, tzinfo=UTC)
    _running(tenant, ready_at=now - timedelta(hours=5), demand={H100: 1})  # since Feb 28th
    spend = tenant_spend(tenant=tenant, now=now)
    assert spend.metered_through is None
    assert spend.estimate == Decimal("6.00")  # 3 hours of March, not February's 2
    assert spend.has_usage  # the page shows the month, not "nothing metered"


@pytest.fixture
def acme(tenant):
    node = NodeFactory(reserved_for="")
    for index in range(8):
        GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    for resource, limit in {H100: 8, "cpu": 64, "memory-gib": 512, "count:inference": 3}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    rate(H100, "2.50")
    start = month_start(timezone.now())
    usage(tenant, H100, start, 3600)  # 2.50 metered in the month's first hour
    MeteringWindow.objects.create(source="allocated", hour=start, status="done")
    return tenant


def _forecast(html: str) -> Decimal:
    return Decimal(html.split('id="forecast">EUR ', 1)[1].split("<", 1)[0].replace(",", ""))


def test_launching_raises_the_forecast_on_the_spend_page_and_the_card_says_estimate(
    login, tenant_member, acme, simulated_gateway
):
    client = login(tenant_member)
    quiet = client.get("/billing/t/acme/").content.decode()
    start = month_start(timezone.now())
    as_of = (start + timedelta(hours=1)).astimezone(timezone.get_current_timezone())
    assert f"As of {as_of:%b} {as_of.day}, {as_of:%H:%M}" in quiet
    assert "the last metered hour" in quiet and 'id="estimate"' not in quiet

    workload = services.workload_launch(
        tenant=acme, actor=tenant_member, kind="inference", name="chat",
        spec={"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "gpu": H100,
              "gpus_per_replica": 2, "min_replicas": 1, "max_replicas": 1},
    )
    # It became ready (the meter bills from then on): as the observation sweep records it.
    Workload.objects.filter(pk=workload.pk).update(status=WorkloadStatus.READY,
                                                   ready_at=timezone.now())
    busy = client.get("/billing/t/acme/").content.decode()
    assert "includes an estimate of EUR" in busy and "for the 1 running workload since" in busy
    assert "(EUR 5 an hour)" in busy
    assert _forecast(busy) > _forecast(quiet)
    card = client.get("/billing/t/acme/card/").content.decode()
    assert 'id="as-of"' in card and "includes an estimate" in card


@pytest.mark.parametrize(("budget", "on_chart"), [("20.00", True), ("100000.00", False)])
def test_a_budget_far_above_the_spend_is_left_off_the_chart_and_said_in_words(
    login, tenant_member, tenant, budget, on_chart
):
    rate(H100, "2.50")
    start = month_start(timezone.now())
    usage(tenant, H100, start, 3600)
    BillingAccount.objects.create(tenant=tenant, monthly_budget=Decimal(budget))
    spend = tenant_spend(tenant=tenant, now=start + timedelta(hours=12))
    chart = spend.chart()
    assert (chart["budget"] is not None) == on_chart == spend.budget_on_chart
    if on_chart:
        assert chart["budget_label"] == "Budget (EUR 20.00)"
    page = login(tenant_member).get("/billing/t/acme/").content.decode()
    assert ('id="budget-off-chart"' in page) == (not on_chart)
    if not on_chart:
        assert "EUR 100,000.00, is far above this month's spend" in page
