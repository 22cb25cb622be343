"""Metering in Django admin (read-only lists with filters, their query counts pinned at two
sizes; "meter again" through the service, audited) and the Celery tasks and beat entry."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing import tasks
from billing.models import CrossCheck, MeteringWindow, UsageRecord
from billing.services import metering
from core.models import AuditEvent
from core.prometheus import PrometheusUnavailable
from tenants.workloads.models import Workload, WorkloadEvent
from tests.factories import TenantFactory

from .timeline import utc

HOUR = utc(2026, 3, 3, 10)
H100 = "gpu:nvidia-h100-80gb"


def usage(count: int) -> None:
    """`count` tenants, each with a workload, allocated and measured rows, a cross-check."""
    for index in range(count):
        tenant = TenantFactory(slug=f"team-{count}-{index}")
        workload = Workload.objects.create(tenant=tenant, kind="vm", name="box",
                                           demand={H100: 1})
        hour = HOUR + timedelta(hours=index)
        UsageRecord.objects.create(tenant=tenant, workload=workload, source="allocated",
                                   resource=H100, hour=hour, unit_seconds=3600)
        UsageRecord.objects.create(tenant=tenant, hostname="gpu-a-001", source="measured",
                                   resource=H100, hour=hour, unit_seconds=3600,
                                   busy_seconds=1800)
        CrossCheck.objects.create(tenant=tenant, hour=hour, portal_gpu_seconds=3600,
                                  opencost_gpu_seconds=1800,
                                  difference_percent=Decimal("-50"), flagged=index % 2 == 0)
        MeteringWindow.objects.get_or_create(source="allocated", hour=hour,
                                             defaults={"status": "done"})
        MeteringWindow.objects.get_or_create(source="measured", hour=hour,
                                             defaults={"status": "gap", "last_error": "down"})


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content.decode()[:1000]
    return len(captured.captured_queries)


LISTS = [
    "/admin/billing/usagerecord/",
    "/admin/billing/usagerecord/?source__exact=measured",
    "/admin/billing/meteringwindow/?status__exact=gap",
    "/admin/billing/crosscheck/?flagged__exact=1",
]


@pytest.mark.django_db
@pytest.mark.parametrize("url", LISTS)
def test_the_metering_lists_take_the_same_queries_for_more_rows(login, platform_admin, url):
    client = login(platform_admin)
    usage(2)
    few = queries(client, url)
    usage(12)
    assert queries(client, url) == few


@pytest.mark.django_db
def test_the_usage_list_filters_by_source_hour_and_tenant(login, platform_admin):
    usage(3)
    client = login(platform_admin)
    tenant = UsageRecord.objects.order_by("hour").first().tenant

    measured = client.get("/admin/billing/usagerecord/?source__exact=measured")
    by_tenant = client.get(f"/admin/billing/usagerecord/?tenant__id__exact={tenant.pk}")
    by_hour = client.get("/admin/billing/usagerecord/?hour__year=2026&hour__month=3&hour__day=3")
    flagged = client.get("/admin/billing/crosscheck/?flagged__exact=1")

    assert measured.context["cl"].result_count == 3
    assert {r.source for r in measured.context["cl"].result_list} == {"measured"}
    assert {r.tenant for r in by_tenant.context["cl"].result_list} == {tenant}
    assert by_hour.context["cl"].result_count == 6
    assert flagged.context["cl"].result_count == 2


@pytest.mark.django_db
def test_nothing_is_added_changed_or_deleted_in_the_metering_admin(login, platform_admin):
    usage(1)
    client = login(platform_admin)
    record = UsageRecord.objects.first()

    assert client.get("/admin/billing/usagerecord/add/").status_code == 403
    client.post(f"/admin/billing/usagerecord/{record.pk}/change/", {"unit_seconds": 1})
    client.post(f"/admin/billing/usagerecord/{record.pk}/delete/", {"post": "yes"})

    record.refresh_from_db()
    assert record.unit_seconds == 3600


@pytest.mark.django_db
def test_meter_again_goes_through_the_service_and_is_audited(settings, login, platform_admin,
                                                             tenant):
    settings.PROMETHEUS_URL = ""
    workload = Workload.objects.create(tenant=tenant, kind="vm", name="box", demand={H100: 2},
                                       ready_at=utc(2026, 3, 3, 9), status="ready")
    WorkloadEvent.objects.create(workload=workload, kind="transition", to_status="ready",
                                 demand={H100: 2}, created_at=utc(2026, 3, 3, 9))
    window = metering.usage_meter_window(source="allocated", hour=HOUR)
    # A late event: a third GPU from 10:30.
    WorkloadEvent.objects.create(workload=workload, kind="scaled", demand={H100: 3},
                                 created_at=utc(2026, 3, 3, 10, 30))
    client = login(platform_admin)

    response = client.post("/admin/billing/meteringwindow/",
                           {"action": "meter_again", "_selected_action": [window.pk]},
                           follow=True)

    assert response.status_code == 200
    assert "1 windows metered again." in response.content.decode()
    window.refresh_from_db()
    assert (window.unit_seconds, window.attempts) == (1800 * 2 + 1800 * 3, 2)
    event = AuditEvent.objects.filter(action="usage.meter").latest("id")
    assert event.actor == platform_admin


@pytest.mark.django_db
def test_meter_again_says_when_a_window_is_still_a_gap(settings, login, platform_admin,
                                                       prometheus_down_url):
    settings.PROMETHEUS_URL = prometheus_down_url
    window = metering.usage_meter_window(source="measured", hour=HOUR)
    client = login(platform_admin)

    response = client.post("/admin/billing/meteringwindow/",
                           {"action": "meter_again", "_selected_action": [window.pk]},
                           follow=True)

    assert "still a gap" in response.content.decode()
    assert AuditEvent.objects.filter(action="usage.meter_gap", actor=platform_admin).exists()


@pytest.mark.django_db
def test_the_hour_task_meters_both_sources_and_retries_a_gap(settings, prometheus_down_url,
                                                             tenant):
    settings.PROMETHEUS_URL = ""
    assert tasks.usage_meter_task(HOUR.isoformat()) == ["allocated done"]

    settings.PROMETHEUS_URL = prometheus_down_url
    with pytest.raises(PrometheusUnavailable):  # autoretry_for: Celery tries again
        tasks.usage_meter_task(HOUR.isoformat())
    assert MeteringWindow.objects.get(source="measured").status == "gap"
    assert PrometheusUnavailable in tasks.usage_meter_task.autoretry_for


@pytest.mark.django_db
def test_the_sweep_runs_hourly_from_beat():
    from portal.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["billing-meter-hourly"]
    assert entry["task"] == "billing.tasks.usage_meter_sweep_task"
    assert entry["task"] in app.tasks
    assert entry["schedule"].minute == {settings.METERING_MINUTE}
    assert isinstance(tasks.usage_meter_sweep_task(), int)
