"""The usage explorer: GPU-hours by tenant, class and day against hand-computed totals,
allocated vs measured utilization and idle GPU-hours, metering health, the CSV export, who may
see it, bad filters, pinned query counts, the fleet overview's headline and the rate card."""

import csv
import io
from datetime import timedelta
from decimal import Decimal
from fractions import Fraction

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from billing.calculations import idle_gpu_seconds, utilization
from billing.calculations.money import floor_hour
from billing.models import CrossCheck, MeteringWindow, Rate, UsageRecord
from billing.selectors.explorer import (
    DailyChart,
    UsageFilter,
    fleet_utilization_headline,
    gpu_equivalent,
    gpu_hours_chart,
    utilization_by_tenant,
    utilization_total,
)
from tests.billing.timeline import utc
from tests.billing.usage_data import (
    H100,
    H200,
    HAMI_CORES,
    HAMI_MEMORY,
    MIG_3G,
    NOVEMBER,
    allocated,
    grow,
    measured,
    measured_done,
    november_usage,
)
from tests.factories import TEST_PASSWORD, TenantFactory
from tests.inventory.fleets import build_fleet
from tests.support.fixtures_browser import screenshot, sign_in, sign_out

pytestmark = pytest.mark.django_db

URL = "/billing/usage/"
NOVEMBER_FILTER = UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1))


@pytest.fixture
def usage(tenant, other_tenant):
    tenant.cost_center = "CC-1001"
    tenant.save()
    november_usage(tenant, other_tenant)
    return tenant, other_tenant


def _rows(response) -> dict:
    return {(row.tenant_slug, row.resource): row for row in response.context["rows"]}


# --- GPU-hours ------------------------------------------------------------------------------------


def test_a_gpu_class_counts_as_its_share_of_a_gpu():
    assert gpu_equivalent(H100) == 1
    assert gpu_equivalent(MIG_3G) == Fraction(3, 7)
    assert gpu_equivalent("mig:nvidia-h200:7g.141gb") == 1
    assert gpu_equivalent(HAMI_CORES) == Fraction(1, 100)
    assert gpu_equivalent(HAMI_MEMORY) is None  # the share's other axis: never added
    assert gpu_equivalent("cpu") is None
    assert gpu_equivalent("gpu:tesla-t4") == 1  # a model the vocabulary does not know yet
    assert gpu_equivalent("mig:nvidia-a100-80gb:no-profile") is None


def test_the_table_sums_gpu_hours_by_tenant_and_class(login, finance, usage):
    response = login(finance).get(URL, NOVEMBER)

    assert response.status_code == 200
    rows = _rows(response)
    assert set(rows) == {
        ("acme", H100), ("acme", MIG_3G), ("acme", HAMI_CORES), ("acme", HAMI_MEMORY),
        ("globex", H200),
    }  # no CPU, nothing from October or December
    assert rows["acme", H100].unit_seconds == 18000
    assert rows["acme", H100].gpu_hours == Decimal("5.00")
    assert rows["acme", H100].cost_center == "CC-1001"
    assert rows["acme", MIG_3G].unit_hours == Decimal("1.00")
    assert rows["acme", MIG_3G].gpu_hours == Decimal("0.43")  # 3/7
    assert rows["acme", HAMI_CORES].gpu_hours == Decimal("0.50")
    assert rows["acme", HAMI_MEMORY].unit_hours == Decimal("24.00")
    assert rows["acme", HAMI_MEMORY].gpu_hours is None
    assert rows["globex", H200].gpu_hours == Decimal("4.00")
    html = response.content.decode()
    assert 'data-tenant="globex" data-resource="gpu:nvidia-h200"' in html


def test_the_chart_stacks_gpu_hours_by_day_and_by_model_or_tenant(usage):
    chart = gpu_hours_chart(NOVEMBER_FILTER)

    assert len(chart.days) == 30 and chart.days[2] == "2026-11-03"
    by_model = {series["key"]: series["data"] for series in chart.by_model}
    # 3 Nov: 4 H100-hours; 4 H200-hours; 3/7 A100 (MIG); 0.5 L40S (HAMi) — 4 Nov: 1 H100-hour
    assert by_model["nvidia-h100-80gb"][2:4] == [4.0, 1.0]
    assert by_model["nvidia-h200"][2] == 4.0
    assert by_model["nvidia-a100-80gb"][2] == 0.43
    assert by_model["nvidia-l40s"][2] == 0.5
    by_tenant = {series["key"]: series["data"] for series in chart.by_tenant}
    assert by_tenant["acme"][2] == 4.93 and by_tenant["acme"][3] == 1.0
    assert by_tenant["globex"][2] == 4.0
    assert chart.total_gpu_hours == Decimal("9.93")  # 5 + 3/7 + 0.5 + 4


def _chart_in_python(usage: UsageFilter, top: int = 8) -> DailyChart:
    """The chart as it was summed before SQL summed it: every (day, tenant, model) row read,
    stacked in Python."""
    from collections import defaultdict

    from django.db.models import Case, Sum, Value, When

    from billing.selectors.explorer import hours as to_hours
    from billing.selectors.explorer.filters import _gpu_seconds, _resource_q, gpu_usage_days
    from billing.selectors.explorer.usage import _series, gpu_usage_by_day
    from inventory import resource_classes

    model_of = Case(
        *[When(_resource_q(key), then=Value(key)) for key in resource_classes.GPU_MODELS],
        default=Value(""),
    )
    rows = (
        gpu_usage_days(usage).annotate(model=model_of)
        .values("day", "tenant__slug", "tenant__name", "model")
        .annotate(gpu_seconds=Sum(_gpu_seconds("unit_seconds"))).order_by()
        .values_list("day", "tenant__slug", "tenant__name", "model", "gpu_seconds")
    )
    by_model = defaultdict(lambda: defaultdict(float))
    by_tenant = defaultdict(lambda: defaultdict(float))
    names, total = {}, 0.0
    for day, slug, name, model, gpu_seconds in rows:
        if not gpu_seconds:
            continue
        by_model[model][day] += gpu_seconds
        by_tenant[slug][day] += gpu_seconds
        names[slug] = name
        total += gpu_seconds
    models = {key: model.display_name for key, model in resource_classes.GPU_MODELS.items()}
    models[""] = "Other GPU models"
    return DailyChart(
        days=[day.isoformat() for day in usage.days],
        by_model=_series(by_model, usage.days, models, top=top),
        by_tenant=_series(by_tenant, usage.days, names, top=top),
        total_gpu_hours=to_hours(total),
        # The table's rows: every (tenant, class) pair, a HAMi memory-only one included.
        tenant_classes=len({(row["tenant__slug"], row["resource"])
                            for row in gpu_usage_by_day(usage)}),
    )


def test_the_chart_summed_in_sql_equals_its_rows_summed_in_python(usage):
    acme, globex = usage
    tenants = [acme, globex] + [TenantFactory(slug=f"team-{n:02}") for n in range(12)]
    grow(tenants, hours=3)
    # Ties (the same GPU-seconds) are ranked by slug; a tenant of HAMi memory alone is none.
    for n, tenant_ in enumerate(tenants[2:]):
        allocated(tenant_, H200, utc(2026, 11, 20 + n % 3, 4), 3600 * (n % 4))
    allocated(TenantFactory(slug="memory-only"), HAMI_MEMORY, utc(2026, 11, 6), 99 * 3600)
    allocated(acme, "gpu:tesla-t4", utc(2026, 11, 7), 3600)  # a model the vocabulary lacks
    for usage_filter in (
        NOVEMBER_FILTER,
        UsageFilter(start=utc(2026, 11, 5), end=utc(2026, 11, 6)),
        UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1), resource="nvidia-h200"),
        UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1), resource=MIG_3G),
        UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1), tenant_slug="acme"),
        UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 12, 1), cost_center="CC-1001"),
        UsageFilter(start=utc(2026, 10, 1), end=utc(2026, 10, 2)),  # nothing
    ):
        for top in (8, 3):
            assert gpu_hours_chart(usage_filter, top=top) == _chart_in_python(usage_filter, top)
    chart = gpu_hours_chart(NOVEMBER_FILTER)
    assert chart.by_tenant[-1]["label"] == "6 others"  # 14 tenants with GPU-hours, 8 shown


def test_filters_narrow_to_a_tenant_a_model_or_a_cost_center(login, finance, usage):
    client = login(finance)

    assert set(_rows(client.get(URL, NOVEMBER | {"tenant": "globex"}))) == {("globex", H200)}
    assert set(_rows(client.get(URL, NOVEMBER | {"resource": "nvidia-l40s"}))) == {
        ("acme", HAMI_CORES), ("acme", HAMI_MEMORY)
    }
    assert set(_rows(client.get(URL, NOVEMBER | {"resource": MIG_3G}))) == {("acme", MIG_3G)}
    assert {slug for slug, _ in _rows(client.get(URL, NOVEMBER | {"cost_center": "CC-1001"}))} == {
        "acme"
    }


def test_the_range_defaults_to_the_last_30_days(login, finance, tenant):
    now = timezone.now()
    allocated(tenant, H100, floor_hour(now), 3600)
    allocated(tenant, H100, floor_hour(now) - timedelta(days=40), 3600)

    response = login(finance).get(URL)

    assert response.status_code == 200
    assert response.context["usage"].start.date() == now.date() - timedelta(days=29)
    assert _rows(response)["acme", H100].unit_seconds == 3600


# --- utilization and idle GPU-hours --------------------------------------------------------------


def test_idle_gpu_hours_are_clamped_per_tenant_hour(tenant, other_tenant):
    # Acme reserved 2 H100s at 10:00 and 1 at 11:00; DCGM saw them busy 1.5 and 1.5 GPU-hours:
    # 10:00 idle 0.5 h; 11:00 measured above the reservation: idle 0, not -0.5.
    allocated(tenant, H100, utc(2026, 11, 3, 10), 7200)
    allocated(tenant, H100, utc(2026, 11, 3, 11), 3600)
    measured(tenant, H100, utc(2026, 11, 3, 10), 7200, 5400)
    measured(tenant, H100, utc(2026, 11, 3, 11), 3600, 5400)
    # Globex reserved an H200 for an hour and never used it; and DCGM saw a GPU busy for an
    # hour it had not reserved (measured only: nothing idle).
    allocated(other_tenant, H200, utc(2026, 11, 3, 10), 3600)
    measured(other_tenant, H200, utc(2026, 11, 4, 10), 3600, 3600)

    rows = {row.tenant_slug: row for row in utilization_by_tenant(NOVEMBER_FILTER)}

    hourly_allocated = {10: 7200, 11: 3600}
    hourly_busy = {10: 5400, 11: 5400}
    expected_idle = sum(idle_gpu_seconds(allocated=hourly_allocated, measured=hourly_busy).values())
    acme = rows["acme"]
    assert (acme.allocated_seconds, acme.measured_seconds) == (10800, 10800)
    assert acme.busy_seconds == 10800
    assert acme.idle_seconds == expected_idle == 1800
    assert acme.idle_hours == Decimal("0.50")
    assert acme.utilization == utilization(allocated=hourly_allocated, measured=hourly_busy)
    assert acme.utilization == Decimal("0.8333")  # 9 000 of 10 800 in use
    globex = rows["globex"]
    assert (globex.allocated_seconds, globex.idle_seconds, globex.utilization) == (
        3600, 3600, Decimal("0")
    )
    fleet = utilization_total(list(rows.values()))
    assert (fleet.allocated_seconds, fleet.idle_seconds) == (14400, 5400)
    assert fleet.utilization == Decimal("0.6250")
    assert fleet.utilization_percent == Decimal("62.5")


def test_mig_and_hami_allocations_count_as_their_share_of_a_gpu(tenant):
    allocated(tenant, MIG_3G, utc(2026, 11, 3, 10), 7 * 3600)  # 7 instance-hours = 3 GPU-hours
    allocated(tenant, HAMI_CORES, utc(2026, 11, 3, 10), 200 * 3600)  # 200 % = 2 GPU-hours
    allocated(tenant, HAMI_MEMORY, utc(2026, 11, 3, 10), 48 * 3600)  # not GPU-hours
    measured(tenant, "gpu:nvidia-a100-80gb", utc(2026, 11, 3, 10), 3600, 3600)

    (acme,) = utilization_by_tenant(NOVEMBER_FILTER)

    assert acme.allocated_seconds == 5 * 3600
    assert acme.idle_seconds == 4 * 3600


def test_hours_whose_measured_window_is_a_gap_are_left_out(tenant):
    allocated(tenant, H100, utc(2026, 11, 3, 10), 3600)
    allocated(tenant, H100, utc(2026, 11, 3, 11), 3600)
    measured(tenant, H100, utc(2026, 11, 3, 10), 3600, 2700)
    MeteringWindow.objects.create(source="measured", hour=utc(2026, 11, 3, 11), status="gap",
                                  attempts=3, last_error="Prometheus unreachable")

    (acme,) = utilization_by_tenant(NOVEMBER_FILTER)

    # 11:00 is unknown, not idle: only 10:00 counts (0.75 in use).
    assert (acme.allocated_seconds, acme.idle_seconds) == (3600, 900)
    assert acme.utilization_percent == Decimal("75.0")


def test_hours_never_measured_are_left_out_and_measured_nothing_is_idle(tenant):
    allocated(tenant, H100, utc(2026, 11, 3, 10), 3600)  # measured metering never ran
    allocated(tenant, H100, utc(2026, 11, 3, 11), 3600)
    assert utilization_by_tenant(NOVEMBER_FILTER) == []  # no measured hour: no utilization

    measured_done(utc(2026, 11, 3, 11))  # metered: DCGM saw none of acme's GPUs busy

    (acme,) = utilization_by_tenant(NOVEMBER_FILTER)
    assert (acme.allocated_seconds, acme.idle_seconds, acme.utilization) == (3600, 3600, 0)


def test_the_page_shows_the_fleet_headline_and_each_tenants_utilization(login, finance, tenant):
    allocated(tenant, H100, utc(2026, 11, 3, 10), 4 * 3600)
    measured(tenant, H100, utc(2026, 11, 3, 10), 4 * 3600, 3600)

    response = login(finance).get(URL, NOVEMBER)

    html = response.content.decode()
    assert '<div class="big" id="fleet-utilization">25 %</div>' in html
    assert 'id="fleet-idle-hours">3</span> idle GPU-hours' in html
    assert response.context["utilization_json"] == [
        {"tenant": "Acme Labs", "allocated": 4.0, "busy": 1.0, "idle": 3.0}
    ]


# --- metering health ----------------------------------------------------------------------------


def test_admins_see_metering_gaps_and_opencost_disagreements(login, platform_admin, tenant):
    MeteringWindow.objects.create(
        source="measured", hour=utc(2026, 11, 3, 10), status="gap", attempts=4,
        last_error="Prometheus at http://prom:9090 refused the connection",
    )
    MeteringWindow.objects.create(source="allocated", hour=utc(2026, 11, 3, 10), status="done")
    CrossCheck.objects.create(
        tenant=tenant, hour=utc(2026, 11, 3, 10), portal_gpu_seconds=7200,
        opencost_gpu_seconds=3600, difference_percent=Decimal("50.00"), flagged=True,
    )
    CrossCheck.objects.create(
        tenant=tenant, hour=utc(2026, 11, 3, 11), portal_gpu_seconds=7200,
        opencost_gpu_seconds=7100, difference_percent=Decimal("1.39"), flagged=False,
    )

    response = login(platform_admin).get(URL, NOVEMBER)

    health = response.context["health"]
    assert (health.windows_total, health.gaps_total, health.cross_checks_total) == (1, 1, 1)
    assert health.unmeasured_hours == 30 * 24  # not one measured window of November is done
    html = response.content.decode()
    assert "Prometheus at http://prom:9090 refused the connection" in html
    assert 'data-window="measured-2026-11-03T10"' in html
    assert 'data-cross-check="acme"' in html and "50.00 %" in html
    assert "1.39 %" not in html  # within the threshold: not flagged
    assert "720 hours without a measurement (a gap, pending or never metered) are left out." in html


# --- CSV ------------------------------------------------------------------------------------------


def test_the_csv_is_the_whole_table_with_formulas_defused(login, finance, usage):
    tenant, _ = usage
    tenant.name = "=HYPERLINK(\"http://evil\")"
    tenant.save()

    response = login(finance).get(URL, NOVEMBER | {"format": "csv"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "gpu-usage-2026-11-01-2026-11-30.csv" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 5
    h100 = next(row for row in rows if row["resource_class"] == H100)
    assert h100 == {
        "tenant": "acme", "tenant_name": "'=HYPERLINK(\"http://evil\")", "cost_center": "CC-1001",
        "resource_class": H100, "resource_label": "NVIDIA H100 80GB HBM3 GPUs",
        "period_start": "2026-11-01", "period_end": "2026-11-30", "unit": "GPU-hours",
        "unit_hours": "5.00", "gpu_hours": "5.00",
    }
    assert next(row for row in rows if row["resource_class"] == HAMI_MEMORY)["gpu_hours"] == ""


# --- access and bad input -----------------------------------------------------------------------


@pytest.mark.parametrize("role", ["finance", "platform_admin"])
def test_finance_and_platform_admins_may_explore_usage(request, login, role):
    assert login(request.getfixturevalue(role)).get(URL).status_code == 200


@pytest.mark.parametrize(
    "role", ["tenant_owner", "tenant_member", "tenant_viewer", "no_role_user"]
)
def test_tenants_may_not_explore_usage(request, login, role, usage):
    response = login(request.getfixturevalue(role)).get(URL, NOVEMBER)
    assert response.status_code == 403
    assert login(request.getfixturevalue(role)).get(
        URL, NOVEMBER | {"format": "csv"}
    ).status_code == 403


def test_signed_out_visitors_are_sent_to_sign_in(client):
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"start": "2026-11-30", "end": "2026-11-01"}, "The end date is before the start date."),
        ({"start": "2025-01-01", "end": "2026-11-30"}, "at most 366 days"),
        ({"start": "yesterday"}, "Enter a valid date."),
        ({"start": "2026-02-30"}, "Enter a valid date."),
        ({"resource": "gpu:nvidia-imaginary"}, "Select a valid choice."),
        ({"start": "2026-11-01\x00"}, ""),
    ],
)
def test_a_bad_filter_is_a_400_with_its_error_and_no_data(login, finance, usage, query, message):
    response = login(finance).get(URL, query)

    assert response.status_code == 400
    html = response.content.decode()
    if message:  # (a NUL character is refused before the page: the portal's 400)
        assert message in html
        assert 'id="filter-errors"' in html
    assert 'id="usage-table"' not in html


def test_a_range_of_366_days_is_allowed(login, finance):
    response = login(finance).get(URL, {"start": "2025-12-01", "end": "2026-12-01"})
    assert response.status_code == 200


# --- query counts ---------------------------------------------------------------------------------


def _queries(client, query) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(URL, query).status_code == 200
    return len(captured)


def test_the_explorer_makes_the_same_queries_whatever_the_data(login, finance, tenant):
    client = login(finance)
    tenants = [tenant] + [TenantFactory() for _ in range(2)]
    grow(tenants, hours=2)
    small = _queries(client, NOVEMBER)
    tenants += [TenantFactory() for _ in range(15)]
    grow(tenants, hours=10, start=utc(2026, 11, 10))
    for n, tenant_ in enumerate(tenants):
        CrossCheck.objects.create(tenant=tenant_, hour=utc(2026, 11, 10), portal_gpu_seconds=10,
                                  opencost_gpu_seconds=20, difference_percent=100, flagged=True)
        MeteringWindow.objects.create(source="measured", hour=utc(2026, 11, 20, n % 24),
                                      status="gap", last_error="down")

    assert _queries(client, NOVEMBER) == small  # the data changed: computed again
    cache.clear()
    assert _queries(client, NOVEMBER | {"page": 2}) == small


# --- the fleet overview ---------------------------------------------------------------------------


def test_the_fleet_overview_shows_the_utilization_headline(login, platform_admin, tenant):
    now = timezone.now()
    hour = floor_hour(now)
    allocated(tenant, H100, hour, 4 * 3600)
    measured(tenant, H100, hour, 4 * 3600, 2 * 3600)

    response = login(platform_admin).get("/fleet/")

    assert response.status_code == 200
    week, month = response.context["utilization_headline"]
    assert (week.label, month.label) == ("Last 7 days", "This month")
    for period in (week, month):
        assert period.total.utilization_percent == Decimal("50.0")
        assert period.total.idle_hours == Decimal("2.00")
    html = response.content.decode()
    assert 'id="fleet-utilization-card"' in html
    assert html.count('<span class="big" data-utilization>50 %</span>') == 2
    assert '<span class="fw-semibold text-body" data-idle-hours>2</span> idle GPU-hours' in html


def _raw_headline(now):
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    end = today + timedelta(days=1)
    starts = (end - timedelta(days=7), today.replace(day=1))
    return [utilization_total(utilization_by_tenant(UsageFilter(start=s, end=end))) for s in starts]


def test_the_fleet_headline_equals_the_hourly_aggregation_and_follows_changes(tenant):
    cache.clear()
    other = TenantFactory()
    now = timezone.now()
    today = floor_hour(now).replace(hour=0)
    for days_ago in range(0, 12):
        hour = today - timedelta(days=days_ago) + timedelta(hours=3)
        allocated(tenant, H100, hour, 4 * 3600)
        measured(tenant, H100, hour, 4 * 3600, (days_ago % 5) * 3600)  # idle clamped when busy
        allocated(other, MIG_3G, hour + timedelta(hours=1), 3600)
        measured(other, MIG_3G, hour + timedelta(hours=1), 3600, 900)
    allocated(tenant, H100, today - timedelta(days=2, hours=-5), 7200)  # hour not measured

    first = [headline.total for headline in fleet_utilization_headline(now=now)]
    again = [headline.total for headline in fleet_utilization_headline(now=now)]  # cached days

    assert first == again == _raw_headline(now)
    assert first[0].idle_seconds > 0 and first[0].busy_seconds > 0
    # A closed day metered again is summed again, not read from the cache.
    hour = today - timedelta(days=3) + timedelta(hours=3)
    UsageRecord.objects.filter(tenant=tenant, hour=hour, source="measured").delete()
    measured(tenant, H100, hour, 4 * 3600, 4 * 3600)
    MeteringWindow.objects.filter(source="measured", hour=hour).update(metered_at=now)
    changed = [headline.total for headline in fleet_utilization_headline(now=now)]
    assert changed == _raw_headline(now) and changed != first


def test_the_fleet_overview_headline_is_bounded_in_queries(login, platform_admin, tenant):
    client = login(platform_admin)
    start = floor_hour(timezone.now()) - timedelta(hours=2)
    grow([tenant], hours=1, start=start)
    with CaptureQueriesContext(connection) as small:
        client.get("/fleet/")
    grow([TenantFactory() for _ in range(10)], hours=3, start=start)
    with CaptureQueriesContext(connection) as large:
        client.get("/fleet/")
    assert len(large) == len(small)


def test_the_fleet_overview_without_usage_says_so(login, platform_admin):
    html = login(platform_admin).get("/fleet/").content.decode()
    assert html.count("No GPU-hours metered yet.") == 2


# --- the rate card --------------------------------------------------------------------------------


def test_everyone_signed_in_sees_the_current_rate_card(login, tenant_viewer):
    now = timezone.now()
    start = floor_hour(now) - timedelta(days=30)
    Rate.objects.create(resource=H100, unit_price=Decimal("2.500000"), valid_from=start,
                        valid_to=floor_hour(now) + timedelta(days=5))
    Rate.objects.create(resource=H100, unit_price=Decimal("2.250000"),
                        valid_from=floor_hour(now) + timedelta(days=5))
    Rate.objects.create(resource="storage-gib", unit_price=Decimal("0.080000"), unit="month",
                        valid_from=start)
    Rate.objects.create(resource=H200, unit_price=Decimal("9"),
                        valid_from=start - timedelta(days=60), valid_to=start)  # over: not shown

    response = login(tenant_viewer).get("/billing/rates/")

    assert response.status_code == 200
    assert [row["rate"].resource for row in response.context["current"]] == [H100, "storage-gib"]
    assert [row["rate"].unit_price for row in response.context["scheduled"]] == [Decimal("2.25")]
    html = response.content.decode()
    assert "2.50 EUR" in html and "2.25 EUR" in html and "0.08 EUR" in html
    assert "per GPU-hour" in html and "per GiB-month" in html
    assert H200 not in html
    assert 'id="rate-card-link"' in html  # every page's footer leads here


def test_the_rate_card_needs_a_sign_in(client):
    assert client.get("/billing/rates/").status_code == 302


# --- in a real browser ----------------------------------------------------------------------------


def _a_month_of_plausible_usage(now) -> None:
    """Six teams over the last 30 days: allocated GPUs of several kinds, DCGM's busy share of
    them (each team its own habits), a metering gap and an OpenCost disagreement."""
    teams = [
        ("helix", "Helix Research", "CC-1001", H100, 8, 0.82),
        ("nova", "Nova Vision", "CC-1002", H200, 4, 0.55),
        ("orbit", "Orbit Speech", "CC-1002", MIG_3G, 6, 0.7),
        ("quanta", "Quanta Finance", "CC-2040", "gpu:nvidia-l40s", 6, 0.31),
        ("atlas", "Atlas Robotics", "CC-3300", H100, 3, 0.66),
        ("ember", "Ember Labs", "CC-1001", HAMI_CORES, 150, 0.45),
    ]
    end = floor_hour(now)
    records = []
    for index, (slug, name, cost_center, resource, units, busy) in enumerate(teams):
        team = TenantFactory(slug=slug, name=name, cost_center=cost_center)
        for hour_index in range(30 * 24):
            hour = end - timedelta(hours=hour_index + 1)
            # Working days busier than weekends; each team starts its jobs at its own hour.
            weekend = hour.weekday() >= 5
            held = units if not (weekend and index % 2) else units // 2
            if (hour_index + index * 5) % 24 < 3 or not held:
                continue
            seconds = held * 3600
            share = gpu_equivalent(resource) or 1
            gpu_seconds = int(seconds * share)
            wave = 0.85 + 0.3 * ((hour_index * 7 + index) % 10) / 10
            records.append(UsageRecord(tenant=team, source="allocated", resource=resource,
                                       hour=hour, unit_seconds=seconds))
            records.append(UsageRecord(
                tenant=team, source="measured", resource="gpu:nvidia-h100-80gb", hour=hour,
                hostname=f"gpu-{index:02d}", unit_seconds=gpu_seconds,
                busy_seconds=min(gpu_seconds, int(gpu_seconds * busy * wave)),
            ))
        if slug == "quanta":
            CrossCheck.objects.create(
                tenant=team, hour=end - timedelta(hours=30), portal_gpu_seconds=21600,
                opencost_gpu_seconds=14400, difference_percent=Decimal("33.33"), flagged=True,
            )
    UsageRecord.objects.bulk_create(records)
    gap = end - timedelta(hours=5)
    MeteringWindow.objects.bulk_create(
        MeteringWindow(source="measured", hour=end - timedelta(hours=n + 1), status="done")
        for n in range(30 * 24) if end - timedelta(hours=n + 1) != gap
    )
    MeteringWindow.objects.create(
        source="measured", hour=gap, status="gap", attempts=3,
        last_error="Prometheus http://prometheus:9090 timed out after 10 s",
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_explorer_and_the_fleet_headline_in_a_browser(page, finance, platform_admin):
    now = timezone.now()
    _a_month_of_plausible_usage(now)
    build_fleet(6)
    since = floor_hour(now) - timedelta(days=90)
    for resource, price, unit in [(H100, "2.45", "hour"), (H200, "3.90", "hour"),
                                  ("gpu:nvidia-l40s", "0.95", "hour"), (MIG_3G, "0.70", "hour"),
                                  (HAMI_CORES, "0.0110", "hour"), ("cpu", "0.025", "hour"),
                                  ("memory-gib", "0.0035", "hour"),
                                  ("storage-gib", "0.08", "month")]:
        Rate.objects.create(resource=resource, unit_price=Decimal(price), unit=unit,
                            valid_from=since)
    Rate.objects.filter(resource=H100).update(valid_to=floor_hour(now) + timedelta(days=10))
    Rate.objects.create(resource=H100, unit_price=Decimal("2.20"),
                        valid_from=floor_hour(now) + timedelta(days=10), note="Volume discount")
    start = (now - timedelta(days=30)).date().isoformat()

    sign_in(page, "finance", TEST_PASSWORD, next_url=f"{URL}?start={start}")
    page.locator("#daily-chart").wait_for()
    assert page.locator("#fleet-utilization").inner_text().endswith("%")
    assert page.locator("#usage-table tbody tr").count() == 6
    assert page.locator("#metering-gaps tbody tr").count() == 1
    assert page.locator("#cross-checks tbody tr").count() == 1
    page.wait_for_function("document.getElementById('daily-chart').width > 0")
    screenshot(page, "usage-explorer")
    page.click("label[for=stack-tenant]")
    screenshot(page, "usage-explorer-by-tenant", full_page=False)
    page.fill("#id_tenant", "quanta")
    with page.expect_navigation():
        page.click("#apply-filters")
    assert page.locator("#usage-table tbody tr").count() == 1
    with page.expect_download() as download:
        page.click("#usage-csv")
    assert download.value.suggested_filename.startswith("gpu-usage-")
    sign_out(page)

    sign_in(page, "platform-admin", TEST_PASSWORD, next_url="/fleet/")
    card = page.locator("#fleet-utilization-card")
    card.wait_for()
    assert card.locator("[data-utilization]").first.inner_text().endswith("%")
    screenshot(page, "fleet-overview-utilization")
    page.goto("/billing/rates/")
    screenshot(page, "rate-card")


def test_a_start_alone_runs_to_today_or_as_far_as_allowed(login, finance):
    client = login(finance)
    today = timezone.now().date()

    assert client.get(URL, {"start": today.isoformat()}).context["last_day"] == today
    response = client.get(URL, {"start": "2020-01-01"})
    assert response.status_code == 200
    assert response.context["last_day"].isoformat() == "2020-12-31"  # 366 days


def test_a_gpu_model_the_vocabulary_does_not_know_is_charted_as_another_model(tenant):
    allocated(tenant, "gpu:tesla-t4", utc(2026, 11, 3, 10), 7200)

    chart = gpu_hours_chart(NOVEMBER_FILTER)

    assert [(s["label"], s["data"][2]) for s in chart.by_model] == [("Other GPU models", 2.0)]


@pytest.mark.parametrize("value", [
    0, 7, 1234, -1234567, Decimal("0.00"), Decimal("5.00"), Decimal("1234.50"),
    Decimal("-9876543.21"), Decimal("1000000"), Decimal("0.43"), None, "", "1234.5", 1234.5,
])
def test_grouped_writes_a_number_as_intcomma_does(value):
    from django.contrib.humanize.templatetags.humanize import intcomma

    from billing.templatetags.billing_tags import grouped

    assert grouped(value) == intcomma(value)
