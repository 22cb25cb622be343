"""The workload list's rows as the tenant sees them: every value a row shows, markup in names
and messages escaped, the launch time in the current time zone; the list makes a pinned number
of queries."""

import datetime
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants.models import Membership
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus
from tenants.workloads.selectors import tenant_workloads_for_list

from .conftest import H100, INFERENCE_SPEC

pytestmark = pytest.mark.django_db

# session, user, roles and memberships, the page's tenant and switcher, the count, the rows
# (with their idle state), today's prices of what they hold, the clusters of the cluster filter.
LIST_QUERIES = 8


def _row(html: str, name: str) -> str:
    row = html[html.rindex("<tr ", 0, html.index(f">{name}</a>")):]
    return row[: row.index("</tr>")]


@pytest.fixture
def varied(tenant, tenant_member, other_member, gpu_pool, workload_quota, simulated_gateway):
    """Workloads in every state, with long and marked-up messages, every kind of resource
    held, big amounts, a launcher with a full name and one without."""
    workload_quota(**{"count:inference": 40, H100: 40, "cpu": 400, "memory-gib": 4000})
    tenant_member.first_name, tenant_member.last_name = "Ada", "<Lovelace>"
    tenant_member.save()
    demands = [
        {"count:inference": 1, H100: 2, "cpu": 8, "memory-gib": 64},
        {"hami:nvidia-l40s:memory-gib": 20, "hami:nvidia-l40s:cores": 30, "cpu": 12345},
        {"mig:nvidia-a100-80gb:1g.10gb": 3, "storage-gib": 1500000, "mystery": 7},
        {},
    ]
    launchers = [tenant_member, other_member, tenant_member]
    statuses = WorkloadStatus.values * 2
    launched = [
        services.workload_launch(
            tenant=tenant,
            actor=tenant_member,
            kind="inference",
            name=f"w-{i}",
            spec={**INFERENCE_SPEC, "max_replicas": 1},
        )
        for i in range(len(statuses))
    ]
    # Then what they hold and their states (set after: the quota admitted the launches).
    for i, (w, status) in enumerate(zip(launched, statuses, strict=True)):
        message = "" if i % 3 == 0 else f"Back-off & <retry> {'x' * (i * 9)}"
        Workload.objects.filter(pk=w.pk).update(
            status=status,
            status_reason=f"Reason<{i}>",
            status_message=message,
            demand=demands[i % len(demands)],
            launched_by=launchers[i % len(launchers)],
        )


@pytest.fixture
def other_member(tenant):
    from tests.factories import MembershipFactory

    return MembershipFactory(tenant=tenant).user


def test_the_rows_show_each_value_escaped(login, tenant, tenant_member, varied, settings):
    settings.TIME_ZONE = "Asia/Kolkata"  # the launch time in the current time zone, not UTC
    html = login(tenant_member).get("/t/acme/workloads/").content.decode()
    first = Workload.objects.get(tenant=tenant, name="w-1")
    second = Workload.objects.get(tenant=tenant, name="w-2")

    row = _row(html, "w-1")
    assert "<retry>" not in html and "<Lovelace>" not in html and "<1>" not in html
    assert f'<tr id="workload-{first.pk}" data-kind="inference">' in row
    assert f'<a href="/t/acme/workloads/{first.pk}/" class="fw-semibold">w-1</a>' in row
    assert 'title="Back-off &amp; &lt;retry&gt; xxxxxxxxx">Reason&lt;1&gt;: Back-off' in row
    assert "12,345 vCPU" in row and "20 GiB memory of NVIDIA L40S" in row
    assert f'data-status="{first.status}"' in row
    kolkata = first.created_at.astimezone(datetime.timezone(datetime.timedelta(hours=5.5)))
    assert f"{kolkata:%Y-%m-%d %H:%M}<div" in row
    row = _row(html, "w-2")
    assert "1,500,000 GiB storage" in row and "3 \u00d7 " in row and "7 mystery" in row
    assert f'data-status="{second.status}"' in row
    row = _row(html, "w-0")
    assert "2 \u00d7 NVIDIA H100" in row and "8 vCPU" in row and "64 GiB memory" in row
    assert '<div class="text-muted">Ada &lt;Lovelace&gt;</div>' in row
    assert "count:" not in html


@pytest.mark.parametrize("query", ["?status=deleted", "?status=failed&kind=inference"])
def test_the_filters_list_their_workloads(login, tenant, tenant_member, varied, query):
    html = login(tenant_member).get(f"/t/acme/workloads/{query}").content.decode()
    status = query.split("status=")[1].split("&")[0]
    expected = set(Workload.objects.filter(tenant=tenant, status=status)
                   .values_list("pk", flat=True))
    listed = {int(pk) for pk in re.findall(r'<tr id="workload-(\d+)"', html)}
    assert listed == expected and len(expected) >= 2


def test_the_list_makes_pinned_queries_at_any_size(login, tenant, tenant_member, varied):
    client = login(tenant_member)
    client.get("/t/acme/workloads/")  # the first visit stores the current tenant in the session
    with CaptureQueriesContext(connection) as queries:
        client.get("/t/acme/workloads/")
    assert len(queries) == LIST_QUERIES


def test_a_workload_whose_launcher_left_shows_a_dash(login, tenant, tenant_member, varied):
    """The old template's `default:w.launched_by.username` raised on a deleted launcher (the
    whole list failed); the row says "—"."""
    Workload.objects.filter(tenant=tenant, name="w-1").update(launched_by=None)
    response = login(tenant_member).get("/t/acme/workloads/")
    assert response.status_code == 200
    html = response.content.decode()
    row = html[html.index(">w-1</a>") :]
    assert row[: row.index("</tr>")].endswith('<div class="text-muted">—</div></td>\n      ')


def _first(tenant) -> Workload:
    return tenant_workloads_for_list(tenant=tenant)[0]


# Each value a row shows, changed alone on the list's first row.
CHANGES = {
    "name": lambda w: {"name": "renamed"},
    "kind": lambda w: {"kind": "vm"},
    "status": lambda w: {"status": "failed" if w.status != "failed" else "pending"},
    "status reason": lambda w: {"status": "failed", "status_message": "m",
                                "status_reason": "Other"},
    "status message": lambda w: {"status": "failed", "status_message": "<new> message"},
    "demand": lambda w: {"demand": {"cpu": 99}},
    "created": lambda w: {"created_at": w.created_at - datetime.timedelta(minutes=3)},
    "launcher": lambda w: {"launched_by": Membership.objects.exclude(user=w.launched_by_id)
                           .filter(tenant=w.tenant_id).values("user")[:1]},
}


def _rows(html: str) -> str:
    return html[html.index("<tbody>") + len("<tbody>\n") : html.index("    </tbody>")]


@pytest.mark.parametrize("change", CHANGES)
def test_a_row_follows_each_value_it_shows(login, tenant, tenant_member, varied, change):
    client = login(tenant_member)
    before = _rows(client.get("/t/acme/workloads/").content.decode())

    first = _first(tenant)
    Workload.objects.filter(pk=first.pk).update(**CHANGES[change](first))
    after = _rows(client.get("/t/acme/workloads/").content.decode())

    assert after != before


@pytest.mark.parametrize("name", ["first_name", "last_name", "username"])
def test_a_row_follows_its_launchers_names(login, tenant, tenant_member, varied, name):
    client = login(tenant_member)
    launcher = _first(tenant).launched_by
    launcher.first_name = launcher.last_name = ""  # so that the username shows
    setattr(launcher, name, "Changed<>")
    launcher.save()

    html = client.get("/t/acme/workloads/").content.decode()

    assert '<div class="text-muted">Changed&lt;&gt;</div>' in _rows(html)


def test_the_list_polls_while_a_workload_on_it_is_in_progress(login, tenant, tenant_member,
                                                               varied):
    client = login(tenant_member)
    assert _polls(client)

    Workload.objects.filter(tenant=tenant).update(
        status=WorkloadStatus.READY, desired_version=1, applied_version=1, reconcile_error=""
    )
    assert not _polls(client)

    Workload.objects.filter(pk=_first(tenant).pk).update(desired_version=2)  # not applied yet
    assert _polls(client)


def _polls(client) -> bool:
    html = client.get("/t/acme/workloads/").content.decode()
    return '<div id="workload-rows" hx-get=' in html
