"""The workload list's rows are built once in the view (plain values, no include or filter per
row) and read exactly as the template that ran the filters on each workload wrote them; the
list makes a pinned number of queries."""

# ruff: noqa: E501 (the old rows' template, line for line)

import datetime
import re

import pytest
from django.contrib.humanize.templatetags.humanize import intcomma
from django.db import connection
from django.template import engines
from django.test.utils import CaptureQueriesContext

from inventory import resource_classes
from tenants.models import Membership
from tenants.workloads import services, views
from tenants.workloads.models import Workload, WorkloadStatus
from tenants.workloads.selectors import tenant_workloads_for_list

from .conftest import H100, INFERENCE_SPEC

pytestmark = pytest.mark.django_db

# session, user, roles and memberships, the page's tenant and switcher, the count, the rows.
LIST_QUERIES = 6

# The rows as the list's template wrote them before, a filter and an include per row.
OLD_ROWS = engines["django"].from_string("""    {% for w in workloads %}
      <tr id="workload-{{ w.pk }}" data-kind="{{ w.kind }}">
        <td><a href="{{ w.detail_url }}" class="fw-semibold">{{ w.name }}</a>
          {% if w.status_message and w.status != 'ready' %}<div class="small text-muted text-truncate" style="max-width:28rem" title="{{ w.status_message }}">{{ w.status_reason }}: {{ w.status_message|truncatechars:90 }}</div>{% endif %}</td>
        <td><i class="bi bi-{{ w.kind_entry.icon }}" aria-hidden="true"></i> {{ w.kind_label }}</td>
        <td>{% include "tenants/workloads/_status_badge.html" %}</td>
        <td class="small">{% for words in w.old_held %}<span class="text-nowrap me-2">{{ words }}</span>{% if not forloop.last %}<br>{% endif %}{% endfor %}</td>
        <td class="small text-nowrap">{{ w.created_at|date:"Y-m-d H:i" }}<div class="text-muted">{{ w.launched_by.get_full_name|default:w.launched_by.username|default:"—" }}</div></td>
      </tr>
    {% endfor %}
""")


def _old_held(demand: dict) -> list[str]:
    """The `held` filter as it was: intcomma and a parse per resource, per row."""
    words = []
    for resource, amount in (demand or {}).items():
        if resource.startswith("count:"):
            continue
        if resource in ("cpu", "memory-gib", "storage-gib"):
            unit = {"cpu": "vCPU", "memory-gib": "GiB memory", "storage-gib": "GiB storage"}
            words.append(f"{intcomma(amount)} {unit[resource]}")
            continue
        try:
            parsed = resource_classes.parse(resource)
        except resource_classes.UnknownResourceClass:
            words.append(f"{intcomma(amount)} {resource}")
            continue
        if parsed.kind == "hami":
            unit = "GiB memory" if parsed.hami_counter == "memory-gib" else "% compute"
            words.append(f"{intcomma(amount)} {unit} of {parsed.gpu_model.display_name} (HAMi)")
            continue
        words.append(f"{intcomma(amount)} \u00d7 {parsed.label.removesuffix(' GPUs')}")
    return words


def _old_rows(tenant, **filters) -> str:
    workloads = list(tenant_workloads_for_list(tenant=tenant, **filters)[:25])
    for w in workloads:
        w.detail_url = f"/t/{tenant.slug}/workloads/{w.pk}/"
        w.old_held = _old_held(w.demand)
    return OLD_ROWS.render({"workloads": workloads})


def _rows(html: str) -> str:
    return html[html.index("<tbody>") + len("<tbody>\n") : html.index("    </tbody>")]


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


@pytest.mark.parametrize("query", ["", "?status=deleted", "?status=failed&kind=inference"])
def test_the_rows_read_as_the_filters_wrote_them(
    login, tenant, tenant_member, varied, query, settings
):
    settings.TIME_ZONE = "Asia/Kolkata"  # the launch time in the current time zone, not UTC
    html = login(tenant_member).get(f"/t/acme/workloads/{query}").content.decode()
    filters = dict(re.findall(r"(\w+)=(\w+)", query))
    expected = _old_rows(tenant, **filters)
    assert expected.count("<tr ") >= 2
    assert _rows(html) == expected


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


# Each value a row shows, changed alone on the list's first row (rows are kept per process
# under the values they show: views._LISTED_ROWS).
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


@pytest.mark.parametrize("change", CHANGES)
def test_a_row_follows_each_value_it_shows(login, tenant, tenant_member, varied, change):
    client = login(tenant_member)
    before = _rows(client.get("/t/acme/workloads/").content.decode())
    assert before == _old_rows(tenant)

    first = _first(tenant)
    Workload.objects.filter(pk=first.pk).update(**CHANGES[change](first))
    after = _rows(client.get("/t/acme/workloads/").content.decode())

    assert after == _old_rows(tenant)
    assert after != before


@pytest.mark.parametrize("name", ["first_name", "last_name", "username"])
def test_a_row_follows_its_launchers_names(login, tenant, tenant_member, varied, name):
    client = login(tenant_member)
    before = _rows(client.get("/t/acme/workloads/").content.decode())
    launcher = _first(tenant).launched_by
    launcher.first_name = launcher.last_name = ""  # so that the username shows
    setattr(launcher, name, "Changed")
    launcher.save()

    after = _rows(client.get("/t/acme/workloads/").content.decode())

    assert after == _old_rows(tenant)
    assert after != before


def test_rows_follow_the_time_zone_and_a_list_asked_again_writes_no_row(
    login, tenant, tenant_member, varied, settings
):
    client = login(tenant_member)
    utc = _rows(client.get("/t/acme/workloads/").content.decode())
    memo = views._LISTED_ROWS.memo
    written = len(memo)
    assert _rows(client.get("/t/acme/workloads/").content.decode()) == utc
    assert len(memo) == written

    settings.TIME_ZONE = "Asia/Kolkata"
    kolkata = _rows(client.get("/t/acme/workloads/").content.decode())
    assert kolkata == _old_rows(tenant) != utc


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
