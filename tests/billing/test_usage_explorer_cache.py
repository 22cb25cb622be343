"""The usage explorer's cache: what it shows from the cache equals what is computed afresh from
the data, straightforwardly, after every kind of write that changes it (usage records written
one by one, in bulk, by metering's COPY, changed, deleted; metering windows; cross-checks; a
tenant renamed, moved to another cost center, added), each write raising the range's usage
stamp (its changes counted by the database's triggers); a repeat view reads the stamp (and what
idle GPU policies gave back, which is not usage); a write outside the range keeps its cache;
writers of one day never wait for each other's count."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from billing.models import CrossCheck, MeteringWindow, UsageRecord, UsageStamp
from billing.selectors.explorer import (
    UsageFilter,
    cost_center_choices,
    gpu_hours_chart,
    gpu_usage_by_tenant_and_class,
    metering_health,
    usage_explorer,
    usage_rows,
    usage_stamp,
    utilization_by_tenant,
    utilization_total,
)
from billing.services import metering
from billing.services.metering_measured import MeasuredUsage, Measurement
from tenants.access.services import tenant_create, tenant_update
from tests.billing.timeline import utc
from tests.billing.usage_data import (
    H100,
    H200,
    MIG_3G,
    NOVEMBER,
    allocated,
    grow,
    measured,
    november_usage,
)
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

URL = "/billing/usage/"
NOVEMBER_FILTER = UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1))


@pytest.fixture
def usage(tenant, other_tenant):
    cache.clear()
    tenant.cost_center = "CC-1001"
    tenant.save()
    november_usage(tenant, other_tenant)
    return tenant, other_tenant


def _health(health) -> tuple:
    return (
        [(w.pk, w.source, w.hour, w.status, w.attempts, w.last_error) for w in health.windows],
        health.windows_total, health.gaps_total, health.unmeasured_hours,
        [(c.pk, c.tenant.slug, c.tenant.name, c.difference_percent) for c in health.cross_checks],
        health.cross_checks_total,
    )


def _fresh(usage: UsageFilter, page=None) -> dict:
    """What the page showed before its cache: each figure computed straight from the data."""
    table = Paginator(gpu_usage_by_tenant_and_class(usage), 25).get_page(page)
    utilization = utilization_by_tenant(usage)
    return {
        "rows": usage_rows(table.object_list),
        "count": table.paginator.count,
        "number": table.number,
        "chart": gpu_hours_chart(usage),
        "utilization": utilization,
        "fleet": utilization_total(utilization),
        "health": _health(metering_health(usage, now=timezone.now())),
        "cost_centers": cost_center_choices(),
    }


def _shown(response) -> dict:
    context = response.context
    return {
        "rows": list(context["rows"]),
        "count": context["page"].paginator.count,
        "number": context["page"].number,
        "chart": context["chart"],
        "utilization": context["utilization"],
        "fleet": context["fleet"],
        "health": _health(context["health"]),
        "cost_centers": context["cost_centers"],
    }


def _filter(query: dict) -> UsageFilter:
    from billing.usage_filters import UsageFilterForm

    form = UsageFilterForm(query)
    assert form.is_valid(), form.errors
    return form.usage_filter(tenant_ids=None)


def _check(client, query=NOVEMBER) -> dict:
    """The page (twice: computed, then from the cache) shows what is computed afresh."""
    first = _shown(client.get(URL, query))
    again = _shown(client.get(URL, query))
    fresh = _fresh(_filter(query), query.get("page"))
    assert first == fresh
    assert again == fresh
    return fresh


def _measurement(tenant, seconds: int) -> Measurement:
    return Measurement(
        usage=[MeasuredUsage(tenant_id=tenant.pk, hostname=f"gpu-node-{n}", resource=H100,
                             unit_seconds=seconds, busy_seconds=seconds // 4)
               for n in range(2)],
        unattributed_seconds=0,
        opencost=None,
    )


def test_the_cached_page_equals_the_data_after_every_write(login, finance, usage):
    acme, globex = usage
    client = login(finance)
    shown = _check(client)

    # A record written one by one.
    allocated(acme, H200, utc(2026, 11, 8, 4), 3600)
    shown, before = _check(client), shown
    assert shown["rows"] != before["rows"] and shown["chart"] != before["chart"]

    # Records in bulk, then changed, then deleted.
    UsageRecord.objects.bulk_create([
        UsageRecord(tenant=globex, source="allocated", resource=MIG_3G,
                    hour=utc(2026, 11, 9, hour), unit_seconds=1800)
        for hour in range(5)
    ])
    shown, before = _check(client), shown
    assert shown["count"] == before["count"] + 1
    UsageRecord.objects.filter(tenant=globex, resource=MIG_3G).update(unit_seconds=900)
    shown, before = _check(client), shown
    assert shown["rows"] != before["rows"]
    UsageRecord.objects.filter(tenant=globex, resource=MIG_3G).delete()
    shown, before = _check(client), shown
    assert shown["count"] == before["count"] - 1

    # Metering's COPY of measured records, and its windows: utilization appears.
    allocated(acme, H100, utc(2026, 11, 12, 6), 2 * 3600)
    metering.usage_meter_measurements(
        measurements={utc(2026, 11, 12, 6): _measurement(acme, 3600)})
    shown, before = _check(client), shown
    assert before["utilization"] == [] and shown["utilization"][0].tenant_slug == "acme"
    assert shown["health"][3] < before["health"][3]  # one hour fewer unmeasured

    # A metering window that turns into a gap, then is retried.
    window = MeteringWindow.objects.create(source="measured", hour=utc(2026, 11, 14, 2),
                                           status="gap", attempts=1, last_error="down")
    shown, before = _check(client), shown
    assert shown["health"][1] == before["health"][1] + 1
    MeteringWindow.objects.filter(pk=window.pk).update(attempts=2, last_error="still down")
    shown, before = _check(client), shown
    assert shown["health"][0] != before["health"][0]

    # A flagged OpenCost cross-check, then cleared.
    check = CrossCheck.objects.create(
        tenant=globex, hour=utc(2026, 11, 3, 10), portal_gpu_seconds=14400,
        opencost_gpu_seconds=7200, difference_percent=Decimal("50.00"), flagged=True)
    shown, before = _check(client), shown
    assert shown["health"][5] == before["health"][5] + 1
    CrossCheck.objects.filter(pk=check.pk).update(flagged=False)
    shown, before = _check(client), shown
    assert shown["health"][5] == before["health"][5] - 1


def test_the_cached_page_follows_the_tenants_it_names(login, finance, usage):
    _, globex = usage
    client = login(finance)
    _check(client)
    _check(client, NOVEMBER | {"cost_center": "CC-1001"})

    globex.name = "Globex Research"
    tenant_update(actor=None, tenant=globex, changed=["name"])
    shown = _check(client)
    assert {row.tenant_name for row in shown["rows"]} == {"Acme Labs", "Globex Research"}

    globex.cost_center = "CC-1001"
    tenant_update(actor=None, tenant=globex, changed=["cost_center"])
    by_cost_center = _check(client, NOVEMBER | {"cost_center": "CC-1001"})
    assert {row.tenant_slug for row in by_cost_center["rows"]} == {"acme", "globex"}

    tenant_create(actor=None, slug="initech", name="Initech", cost_center="CC-2002")
    assert _check(client)["cost_centers"] == ["CC-1001", "CC-2002"]


def test_every_page_and_filter_of_the_table_is_its_own_cached_view(login, finance, tenant):
    cache.clear()
    client = login(finance)
    tenants = [tenant] + [TenantFactory() for _ in range(14)]
    grow(tenants, hours=2)
    for query in (NOVEMBER, NOVEMBER | {"page": 2}, NOVEMBER | {"page": 99},
                  NOVEMBER | {"page": "x"}, NOVEMBER | {"page": 0},
                  NOVEMBER | {"resource": "nvidia-a100-80gb"},
                  NOVEMBER | {"tenant": tenant.slug}, {"start": "2026-11-05", "end": "2026-11-05"}):
        _check(client, query)


def _queries(client, query) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(URL, query).status_code == 200
    return len(captured)


def test_a_repeat_view_is_two_queries_and_a_fresh_one_the_same_queries_at_any_size(
    login, finance, tenant
):
    cache.clear()
    client = login(finance)
    client.get("/billing/rates/")  # the session and its user, warmed up
    tenants = [tenant] + [TenantFactory() for _ in range(2)]
    grow(tenants, hours=2)
    fresh = _queries(client, NOVEMBER)
    repeat = _queries(client, NOVEMBER)
    next_page = _queries(client, NOVEMBER | {"page": 2})  # the summary cached, not its page
    tenants += [TenantFactory() for _ in range(30)]
    grow(tenants, hours=10, start=utc(2026, 11, 10))
    for n, tenant_ in enumerate(tenants):
        CrossCheck.objects.create(tenant=tenant_, hour=utc(2026, 11, 10), portal_gpu_seconds=10,
                                  opencost_gpu_seconds=20, difference_percent=100, flagged=True)
        MeteringWindow.objects.create(source="measured", status="gap", last_error="down",
                                      hour=utc(2026, 11, 20) + timedelta(hours=n))

    assert (_queries(client, NOVEMBER), _queries(client, NOVEMBER),
            _queries(client, NOVEMBER | {"page": 2})) == (fresh, repeat, next_page)
    # The session's 3 (session, user, roles and memberships), the range's stamp, and what the
    # tenants' idle GPU policies gave back (theirs to write: not under the usage stamp).
    assert repeat == 5
    # ... then the page of the table and the stamp again (unchanged: the page is cached).
    assert next_page == repeat + 2
    # ... and the summary's 11: the chart (which counts the table's rows too), utilization (2),
    # metering health (6: windows, cross-checks and capped host-hours), the cost centers and
    # the GPU-hours by cluster.
    assert fresh == next_page + 11


def test_a_write_outside_the_range_keeps_its_cache(login, finance, usage):
    acme, _ = usage
    client = login(finance)
    client.get(URL, NOVEMBER)
    repeat = _queries(client, NOVEMBER)

    allocated(acme, H100, utc(2026, 12, 3, 10), 3600)
    MeteringWindow.objects.create(source="allocated", hour=utc(2026, 10, 30, 1), status="done")
    acme.reconcile_error = "the cluster refused"  # not a name, slug or cost center
    acme.save()

    assert _queries(client, NOVEMBER) == repeat


def test_each_write_raises_the_stamp_of_its_days_only(tenant):
    third, fourth = UsageFilter(start=utc(2026, 11, 3), end=utc(2026, 11, 4)), UsageFilter(
        start=utc(2026, 11, 4), end=utc(2026, 11, 5))

    def stamps():
        return usage_stamp(third), usage_stamp(fourth)

    before = stamps()
    record = allocated(tenant, H100, utc(2026, 11, 3, 23), 3600)
    after = stamps()
    assert after[0] > before[0] and after[1] == before[1]
    record.hour = utc(2026, 11, 4, 0)  # moved to the next day: both days change
    record.save()
    moved = stamps()
    assert moved[0] > after[0] and moved[1] > after[1]
    measured(tenant, H100, utc(2026, 11, 4, 5), 3600, 1800)
    assert stamps()[0] == moved[0] and stamps()[1] > moved[1]
    tenant.name = "Acme Renamed"
    tenant.save()  # every day
    renamed = stamps()
    assert renamed[0] > moved[0] and renamed[1] > moved[1]
    assert UsageStamp.objects.filter(day=UsageStamp.ALL_DAYS).exists()
    UsageRecord.objects.all().delete()  # of the 4th only, now
    assert stamps()[0] == renamed[0] and stamps()[1] > renamed[1]


def test_the_unmeasured_hours_follow_the_clock_not_the_cache(tenant):
    cache.clear()
    usage = UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 11, 3))
    morning = utc(2026, 11, 2, 6, 30)

    first = usage_explorer(usage, page=None, now=morning).health
    with CaptureQueriesContext(connection) as cached:
        later = usage_explorer(usage, page=None, now=morning + timedelta(hours=3)).health

    assert len(cached) == 1  # the stamp: the rest from the cache
    assert (first.unmeasured_hours, later.unmeasured_hours) == (30, 33)


def test_a_day_keeps_a_row_or_two_however_often_it_is_written(tenant):
    third = UsageFilter(start=utc(2026, 11, 3), end=utc(2026, 11, 4))
    before = usage_stamp(third)  # the tenant's creation counted on every day
    for hour in range(6):
        allocated(tenant, H100, utc(2026, 11, 3, hour), 3600)
    UsageRecord.objects.filter(tenant=tenant).update(unit_seconds=1800)

    # Each statement one change (an update two: its old rows' days and its new rows').
    assert usage_stamp(third) == before + 6 + 2
    assert UsageStamp.objects.filter(day=utc(2026, 11, 3).date()).count() == 1


@pytest.mark.django_db(transaction=True)
def test_writers_of_one_day_never_wait_for_each_other(tenant):
    """Two metering runs of one day (allocated and measured, say) write at once: the second
    does not queue behind the first's uncommitted count of the day."""
    import threading

    from django.db import transaction

    third = UsageFilter(start=utc(2026, 11, 3), end=utc(2026, 11, 4))
    written, finish = threading.Event(), threading.Event()
    before = usage_stamp(third)

    def first_writer():
        try:
            with transaction.atomic():
                allocated(tenant, H100, utc(2026, 11, 3, 1), 3600)
                written.set()
                finish.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=first_writer)
    thread.start()
    try:
        assert written.wait(10)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")  # a wait would fail here
            allocated(tenant, H200, utc(2026, 11, 3, 2), 3600)
        assert usage_stamp(third) == before + 1  # the other's change is not committed yet
    finally:
        finish.set()
        thread.join()
    assert usage_stamp(third) == before + 2
