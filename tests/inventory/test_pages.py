"""Fleet pages: who may see what, filters, htmx partials, actions, and pinned query counts."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from core.models import AuditEvent
from inventory.models import GPU, HealthEvent, Node, NodeState
from inventory.selectors.nodes import nodes_for_list
from tenants.workloads.models import Workload, WorkloadStatus
from tests.factories import (
    GPUFactory,
    NodeFactory,
    QuotaFactory,
    SiteFactory,
    TenantFactory,
    hami_gpu_node,
)

from .fleets import build_fleet

ADMIN_PAGES = ["/fleet/", "/fleet/nodes/", "/fleet/racks/", "/fleet/import/", "/fleet/holdings/",
               "/fleet/export/?format=csv&objects=nodes"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ADMIN_PAGES)
def test_tenants_and_finance_get_403_on_hardware_pages(login, tenant_member, finance, path):
    for user in (tenant_member, finance):
        assert login(user).get(path).status_code == 403


@pytest.mark.django_db
def test_tenants_get_403_on_a_node_and_a_rack_and_cannot_act(login, tenant_owner):
    node = NodeFactory(state=NodeState.AVAILABLE)
    client = login(tenant_owner)

    assert client.get(f"/fleet/nodes/{node.pk}/").status_code == 403
    assert client.get(f"/fleet/racks/{node.rack_id}/").status_code == 403
    response = client.post(f"/fleet/nodes/{node.pk}/action/",
                           {"action": "cordon", "reason": "mine now"})
    assert response.status_code == 403
    node.refresh_from_db()
    assert node.state == NodeState.AVAILABLE
    assert not AuditEvent.objects.filter(action="node.transition").exists()


@pytest.mark.django_db
def test_tenants_see_the_capacity_summary(login, tenant_member, tenant):
    build_fleet(8)
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-h100-80gb", limit=4)

    response = login(tenant_member).get("/fleet/capacity/")

    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-resource="gpu:nvidia-h100-80gb"' in page
    assert "fleet-tabs" not in page  # no way into node details from here
    assert "bulk1" not in page and "gpu-00000" not in page


@pytest.mark.django_db
def test_the_capacity_summary_lists_hami_classes(login, tenant_member, tenant):
    hami_gpu_node(gpus=2)

    page = login(tenant_member).get("/fleet/capacity/").content.decode()

    assert 'data-resource="hami:nvidia-l40s:memory-gib"' in page
    assert 'data-resource="hami:nvidia-l40s:cores"' in page
    assert 'data-resource="gpu:nvidia-l40s"' not in page  # shared GPUs are no whole GPUs


@pytest.mark.django_db
def test_a_user_without_any_role_gets_no_capacity(login, no_role_user):
    assert login(no_role_user).get("/fleet/capacity/").status_code == 403


def _holding(tenant, name, demand, status=WorkloadStatus.READY):
    return Workload.objects.create(tenant=tenant, kind="inference", name=name, demand=demand,
                                   status=status)


def _sharing_fleet(tenant, dedicated):
    """8 whole H100s, an A100 node with 2 of 8 GPUs in MIG, 8 HAMi L40S (4 more on a node
    reserved for the dedicated tenant), and what tenants hold."""
    whole = NodeFactory()
    for index in range(8):
        GPUFactory(node=whole, index=index, model="nvidia-h100-80gb")
    mig = NodeFactory()
    for index in range(8):
        GPUFactory(node=mig, index=index, model="nvidia-a100-80gb",
                   mig_layout=["1g.10gb"] * 7 if index < 2 else [])
    hami_gpu_node()
    hami_gpu_node(gpus=4, reserved_for=dedicated.slug)
    QuotaFactory(tenant=tenant, resource="hami:nvidia-l40s:memory-gib", limit=96)
    QuotaFactory(tenant=tenant, resource="hami:nvidia-l40s:cores", limit=200)
    QuotaFactory(tenant=tenant, resource="mig:nvidia-a100-80gb:1g.10gb", limit=7)
    QuotaFactory(tenant=dedicated, resource="gpu:nvidia-h100-80gb", limit=8)
    QuotaFactory(tenant=dedicated, resource="cpu", limit=64)
    _holding(tenant, "chat", {"hami:nvidia-l40s:memory-gib": 24, "hami:nvidia-l40s:cores": 60,
                              "cpu": 8, "count:inference": 1})
    _holding(tenant, "eval", {"mig:nvidia-a100-80gb:1g.10gb": 3})
    _holding(tenant, "gone", {"hami:nvidia-l40s:cores": 100}, status=WorkloadStatus.DELETED)
    _holding(dedicated, "train", {"gpu:nvidia-h100-80gb": 4, "cpu": 32})


@pytest.mark.django_db
def test_the_overview_shows_how_each_models_gpus_are_shared_and_what_tenants_hold(
    login, platform_admin, tenant
):
    dedicated = TenantFactory(slug="helix", name="Helix", isolation="dedicated")
    _sharing_fleet(tenant, dedicated)

    response = login(platform_admin).get("/fleet/")

    page = response.content.decode()
    sharing = {row.model: (row.whole, row.mig, row.hami, row.hami_reserved)
               for row in response.context["sharing"]}
    assert sharing == {
        "nvidia-h100-80gb": (8, 0, 0, 0),
        "nvidia-a100-80gb": (6, 2, 0, 0),
        "nvidia-l40s": (0, 0, 12, 4),
    }
    assert next(iter(sharing)) == "nvidia-h100-80gb"  # in the vocabulary's order
    assert 'id="sharing-by-model"' in page and 'id="tenant-holdings"' in page
    assert "4 reserved" in page  # HAMi GPUs nobody can use: dedicated tenants get no shares
    # The overview sums the holdings per GPU class; each tenant's are on the holdings page.
    classes = {row.total.resource: (row.total.held, row.total.granted, row.tenants, row.over)
               for row in response.context["holdings"].classes}
    assert classes == {
        "gpu:nvidia-h100-80gb": (4, 8, 1, 0),
        "mig:nvidia-a100-80gb:1g.10gb": (3, 7, 1, 0),
        "hami:nvidia-l40s:memory-gib": (24, 96, 1, 0),
        "hami:nvidia-l40s:cores": (60, 200, 1, 0),  # the deleted workload holds nothing
    }
    assert 'data-resource="hami:nvidia-l40s:cores"' in page
    assert "/fleet/holdings/" in page

    listed = login(platform_admin).get("/fleet/holdings/")

    holdings = {h.slug: {line.resource: (line.held, line.granted) for line in h.lines}
                for h in listed.context["page"].object_list}
    assert holdings[tenant.slug] == {
        "mig:nvidia-a100-80gb:1g.10gb": (3, 7),
        "hami:nvidia-l40s:memory-gib": (24, 96),
        "hami:nvidia-l40s:cores": (60, 200),
    }
    assert holdings["helix"] == {"gpu:nvidia-h100-80gb": (4, 8)}  # GPU classes only
    assert f'data-tenant="{tenant.slug}" data-resource="hami:nvidia-l40s:cores"' in (
        listed.content.decode()
    )


@pytest.mark.django_db
def test_the_overview_names_the_tenants_over_quota_and_the_holdings_page_lists_them(
    login, platform_admin, tenant
):
    dedicated = TenantFactory(slug="helix", name="Helix", isolation="dedicated")
    _sharing_fleet(tenant, dedicated)
    _holding(dedicated, "more", {"gpu:nvidia-h100-80gb": 6})  # 10 held of 8
    TenantFactory(slug="idle", name="Idle")  # no GPU quota, no GPU workload
    client = login(platform_admin)

    response = client.get("/fleet/")

    summary = response.context["holdings"]
    assert summary.tenants == 2 and summary.over_quota_count == 1
    assert [(t.slug, [(x.resource, x.held, x.granted) for x in t.lines])
            for t in summary.over_quota] == [("helix", [("gpu:nvidia-h100-80gb", 10, 8)])]
    page = response.content.decode()
    assert 'id="over-quota"' in page and "1 tenant holds more than its quota" in page
    assert 'data-tenant="helix" data-resource="gpu:nvidia-h100-80gb"' in page

    every = client.get("/fleet/holdings/").context["page"]
    over = client.get("/fleet/holdings/?over=1").context["page"]

    assert [t.slug for t in every.object_list] == [tenant.slug, "helix"]  # Acme, Helix
    assert [t.slug for t in over.object_list] == ["helix"]


@pytest.mark.django_db
def test_the_holdings_page_shows_50_tenants_a_page_in_the_same_queries(login, platform_admin):
    for n in range(53):
        other = TenantFactory(slug=f"lab-{n:02}", name=f"Lab {n:02}")
        QuotaFactory(tenant=other, resource="gpu:nvidia-h100-80gb", limit=2)
        _holding(other, "a", {"gpu:nvidia-h100-80gb": 1, "cpu": 4})
    client = login(platform_admin)
    client.get("/fleet/holdings/")

    with CaptureQueriesContext(connection) as first:
        response = client.get("/fleet/holdings/")
    with CaptureQueriesContext(connection) as second:
        last = client.get("/fleet/holdings/?page=2")

    assert len(response.context["page"].object_list) == 50
    assert [t.slug for t in last.context["page"].object_list] == ["lab-50", "lab-51", "lab-52"]
    assert len(first) == len(second)
    assert 'id="holdings-pagination"' in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/fleet/holdings/", "/fleet/holdings/?over=1"])
def test_tenants_and_finance_get_403_on_the_holdings_page(login, tenant_member, finance, path):
    for user in (tenant_member, finance):
        assert login(user).get(path).status_code == 403


@pytest.mark.django_db
def test_a_hami_nodes_page_shows_its_sharing_what_hami_registered_and_its_vgpus(
    login, platform_admin
):
    node = hami_gpu_node(gpus=2, unhealthy=(1,),
                         hami_in_use={"vgpus": 2, "memory_mib": 15360, "cores": 40})
    node.placed_pods = [{"namespace": "tenant-nova", "name": "chat-0", "gpus": 1, "mig": {},
                         "hami": {"memory_mib": 12288, "cores": 30}}]
    node.save()
    client = login(platform_admin)

    page = client.get(f"/fleet/nodes/{node.pk}/").content.decode()
    listed = client.get("/fleet/nodes/").content.decode()

    assert 'id="node-sharing" data-sharing="hami"' in page and "HAMi shares" in page
    assert "10 vGPUs · 45.0 GiB · 100 %" in page and "unhealthy" in page
    assert "2 vGPUs · 15.0 GiB · 40 % compute" in page
    assert "1 vGPU · 12.0 GiB · 30 % compute" in page
    assert 'data-sharing="hami"' in listed


@pytest.mark.django_db
def test_the_overview_takes_the_same_queries_however_many_tenants_hold_gpus(
    login, platform_admin, tenant
):
    dedicated = TenantFactory(slug="helix", isolation="dedicated")
    _sharing_fleet(tenant, dedicated)
    client = login(platform_admin)
    client.get("/fleet/")

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/fleet/").status_code == 200
        return len(captured.captured_queries)

    few = queries()
    for n in range(6):
        other = TenantFactory(slug=f"more-{n}")
        QuotaFactory(tenant=other, resource="hami:nvidia-l40s:cores", limit=100)
        _holding(other, "a", {"hami:nvidia-l40s:cores": 50, "hami:nvidia-l40s:memory-gib": 8})
        _holding(other, "b", {"gpu:nvidia-h100-80gb": 1})
        hami_gpu_node(gpus=2)
    assert queries() == few


@pytest.mark.django_db
def test_the_overview_shows_health_state_and_capacity(login, platform_admin):
    build_fleet(40)

    response = login(platform_admin).get("/fleet/")

    page = response.content.decode()
    assert response.status_code == 200
    for landmark in ('id="capacity-chart"', 'id="nodes-by-state"', 'id="health-summary"',
                     'id="capacity-by-class"', "XID 79", "/fleet/nodes/?state=cordoned"):
        assert landmark in page
    assert response.context["health"].open_critical == 3


@pytest.mark.django_db
def test_node_list_filters_by_site_model_state_health_and_reserved_tenant(login, platform_admin):
    build_fleet(48)
    NodeFactory(hostname="lonely-1", reserved_for="nova")
    client = login(platform_admin)

    def hosts(query: str) -> list[str]:
        response = client.get(f"/fleet/nodes/?{query}")
        assert response.status_code == 200
        return _listed_hostnames(response)

    assert len(hosts("site=bulk1")) == 48
    assert len(hosts("model=nvidia-l40s")) == 16
    assert hosts("state=maintenance") == [f"gpu-{i:05d}" for i in range(7, 48, 8)]
    assert hosts("health=critical") == ["gpu-00000", "gpu-00017", "gpu-00034"]
    assert hosts("health=degraded") == ["gpu-00013", "gpu-00026", "gpu-00039"]
    assert hosts("reserved_for=nova") == ["lonely-1"]
    assert len(hosts("reserved_for=any")) == 6
    assert hosts("q=00042") == ["gpu-00042"]
    assert hosts("state=maintenance&model=nvidia-h100-80gb") == ["gpu-00015", "gpu-00039"]


def _listed_hostnames(response) -> list[str]:
    """The hostnames of the node list's rows, in their order."""
    return re.findall(r'<tr data-node="([^"]*)">', response.content.decode())


@pytest.mark.django_db
def test_node_list_pages_and_answers_htmx_with_the_table_only(login, platform_admin):
    build_fleet(120)
    client = login(platform_admin)

    full = client.get("/fleet/nodes/?page=3&state=available")
    partial = client.get("/fleet/nodes/?state=available&page=2", HTTP_HX_REQUEST="true")

    assert full.context["page"].paginator.count == 90
    assert len(full.context["page"].object_list) == 40
    assert full.context["page"].number == 2  # 90 rows: page 3 does not exist, the last is 2
    body = partial.content.decode()
    assert body.lstrip().startswith('<div class="card" id="node-table">')
    assert "<html" not in body and 'id="node-filters"' not in body
    assert 'id="node-pagination"' in body


@pytest.mark.django_db
def test_node_list_rows_link_each_node_and_rack_and_show_their_badges(login, platform_admin):
    build_fleet(20)
    NodeFactory(hostname="loose-1", rack=None, position=None, reserved_for="nova")

    response = login(platform_admin).get("/fleet/nodes/")

    page = response.content.decode()
    listed = _listed_hostnames(response)
    assert len(listed) == 21
    for node in nodes_for_list().filter(hostname__in=listed).select_related("rack__site"):
        row = page[page.index(f'<tr data-node="{node.hostname}">') :]
        row = row[: row.index("</tr>")]
        assert f'href="{reverse("inventory:node-detail", args=[node.pk])}"' in row
        if node.rack_id:
            assert f'href="{reverse("inventory:rack-detail", args=[node.rack_id])}"' in row
            assert f"{node.rack.site.slug}/{node.rack.name}</a>" in row
        else:
            assert "unracked" in row
        assert f'data-state="{node.state}">{node.get_state_display()}</span>' in row
        assert f'data-health="{node.health}"' in row
    assert 'data-health="critical"' in page and 'data-health="degraded"' in page
    assert '<i class="bi bi-lock"></i> nova</span>' in page


# Committed, as a request's data is: the filter's choices and counts are then read from the
# cache (the count of a filter once per version of the inventory).
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("size", [50, 2000])
def test_node_list_page_makes_the_same_queries_at_50_and_2000_nodes(
    login, platform_admin, size, django_assert_num_queries
):
    build_fleet(size)
    client = login(platform_admin)
    client.get("/fleet/nodes/")  # warm the session and caches
    filtered = "/fleet/nodes/?health=critical&state=available&state=cordoned"

    with django_assert_num_queries(NODE_LIST_PAGE_QUERIES + 1):  # the filter's count
        first = client.get(filtered)
    with django_assert_num_queries(NODE_LIST_PAGE_QUERIES):
        again = client.get(filtered)
    assert first.status_code == again.status_code == 200
    count = Node.objects.filter(state__in=["available", "cordoned"]).count()
    assert first.context["page"].paginator.count == again.context["page"].paginator.count
    assert 0 < again.context["page"].paginator.count < count


@pytest.mark.django_db(transaction=True)
def test_the_node_lists_count_follows_the_inventory(login, platform_admin):
    nodes = build_fleet(6)
    client = login(platform_admin)

    def count(query=""):
        return client.get(f"/fleet/nodes/{query}").context["page"].paginator.count

    assert count() == 6 and count("?q=extra") == 0
    NodeFactory(hostname="extra-1")
    assert count() == 7 and count("?q=extra") == 1
    critical = count("?health=critical")
    healthy = next(n for n in nodes if n.gpus.exists()
                   and not n.gpus.exclude(health="healthy").exists()
                   and not n.health_events.filter(resolved_at__isnull=True).exists())
    GPU.objects.filter(node=healthy).update(health="failed")
    assert count("?health=critical") == critical + 1
    Node.objects.filter(hostname="extra-1").delete()
    assert count() == 6


@pytest.mark.django_db(transaction=True)
def test_the_node_lists_filter_choices_follow_the_sites_and_reservations(login, platform_admin):
    build_fleet(3)
    client = login(platform_admin)
    page = client.get("/fleet/nodes/").content.decode()
    assert '<option value="far">' not in page and '<option value="nova">' not in page
    SiteFactory(slug="far", name="Far away")
    Node.objects.filter(pk=Node.objects.first().pk).update(reserved_for="nova")
    page = client.get("/fleet/nodes/?site=far").content.decode()
    assert '<option value="far" selected>Far away</option>' in page
    assert '<option value="nova">nova</option>' in page
    Node.objects.update(reserved_for="")
    assert '<option value="nova">' not in client.get("/fleet/nodes/").content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("size", [50, 2000])
def test_node_list_api_makes_the_same_queries_at_50_and_2000_nodes(
    api_client, platform_admin, size, django_assert_num_queries
):
    build_fleet(size)
    api_client.force_login(platform_admin)
    api_client.get("/api/v1/nodes/")

    with django_assert_num_queries(NODE_LIST_API_QUERIES):
        response = api_client.get("/api/v1/nodes/?page_size=100&model=nvidia-h100-80gb")
    assert response.status_code == 200
    assert response.json()["count"] == (size + 2) // 3


# Session, user, roles and memberships (one query); the tables' versions (the filter's site
# and reserved-for choices and the filtered count are cached under them, core.stamps); the
# page of nodes; and the navigation's count of quota requests waiting for a decision.
NODE_LIST_PAGE_QUERIES = 6
NODE_LIST_API_QUERIES = 5


@pytest.mark.django_db
def test_node_detail_shows_gpus_topology_nics_timeline_and_workloads(login, platform_admin):
    node = build_fleet(1)[0]
    Node.objects.filter(pk=node.pk).update(
        placed_pods=[{"namespace": "tenant-helix", "name": "train-0", "gpus": 8, "mig": {}}]
    )
    client = login(platform_admin)
    client.post(f"/fleet/nodes/{node.pk}/action/", {"action": "cordon", "reason": "XID 79"})

    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/fleet/nodes/{node.pk}/")

    page = response.content.decode()
    assert response.status_code == 200
    assert page.count('data-gpu="') == 8
    assert 'data-numa="0"' in page and 'data-numa="1"' in page
    assert "mlx5_1" in page and "train-0" in page
    assert "available → cordoned · platform-admin" in page
    assert "XID 79" in page
    assert len(queries) < 25


@pytest.mark.django_db
def test_an_admin_moves_a_node_from_its_page_and_an_illegal_move_is_refused(
    login, platform_admin, django_capture_on_commit_callbacks
):
    node = NodeFactory(state=NodeState.AVAILABLE)
    client = login(platform_admin)

    with django_capture_on_commit_callbacks(execute=True):
        cordoned = client.post(f"/fleet/nodes/{node.pk}/action/",
                               {"action": "cordon", "reason": "fan noise"}, follow=True)
        refused = client.post(f"/fleet/nodes/{node.pk}/action/",
                              {"action": "retire", "reason": "too early"}, follow=True)

    node.refresh_from_db()
    assert node.state == NodeState.CORDONED
    assert "cordoned" in cordoned.content.decode()
    assert "cannot go from cordoned to retired" in refused.content.decode()
    assert AuditEvent.objects.filter(action="node.transition").count() == 1


@pytest.mark.django_db
def test_resolving_a_health_event_from_the_node_page(login, platform_admin):
    node = NodeFactory()
    event = HealthEvent.objects.create(node=node, kind="thermal-violation", subject="gpu:0",
                                       severity="warning")

    login(platform_admin).post(f"/fleet/events/{event.pk}/resolve/", {"note": "fan replaced"})

    event.refresh_from_db()
    assert event.resolved_at is not None and event.resolution == "fan replaced"


@pytest.mark.django_db
def test_the_rack_view_draws_nodes_at_their_units(login, platform_admin):
    node = NodeFactory(position=10, height_units=4)
    GPUFactory(node=node, index=0)

    response = login(platform_admin).get(f"/fleet/racks/{node.rack_id}/")

    slots = response.context["slots"]
    assert response.status_code == 200
    assert len(slots) == 42 - 3  # one 4U slot instead of four 1U ones
    occupied = next(slot for slot in slots if slot.node)
    assert (occupied.unit, occupied.span, occupied.node.hostname) == (13, 4, node.hostname)


@pytest.mark.django_db
def test_sync_now_in_the_demo_reads_the_simulated_fleet_without_a_500(
    login, platform_admin, simulated_gateway
):
    response = login(platform_admin).post("/fleet/sync/", follow=True)
    assert response.status_code == 200
    assert "Cluster sync done." in response.content.decode()


# Every other list the fleet serves: the query count must not grow with the fleet.
LISTS = [
    "/fleet/", "/fleet/racks/", "/fleet/capacity/", "/fleet/export/?format=json",
    "/api/v1/gpus/?page_size=100", "/api/v1/racks/", "/api/v1/sites/",
    "/api/v1/health-events/?resolved_at__isnull=true", "/api/v1/capacity/",
    "/api/v1/fleet/summary/", "/api/v1/inventory/export/?as=csv&objects=nics",
]


@pytest.mark.django_db
def test_every_fleet_list_makes_the_same_queries_at_50_and_2000_nodes(login, platform_admin):
    client = login(platform_admin)

    def queries() -> dict[str, int]:
        counts = {}
        for path in LISTS:
            client.get(path)  # warm the session
            with CaptureQueriesContext(connection) as captured:
                assert client.get(path).status_code == 200, path
            counts[path] = len(captured)
        return counts

    build_fleet(50)
    small = queries()
    build_fleet(1950, prefix="more")
    assert Node.objects.count() == 2000

    assert queries() == small


@pytest.mark.django_db
def test_node_detail_works_out_what_the_list_annotates_as_the_list_does():
    from inventory.selectors.nodes import node_get_for_detail, nodes_for_list

    build_fleet(48)
    NodeFactory(hostname="empty-1")  # no GPUs
    listed = list(nodes_for_list())

    assert {node.health for node in listed} == {"healthy", "degraded", "critical"}
    for node in listed:
        detail = node_get_for_detail(node_id=node.pk)
        assert (detail.gpu_count, detail.gpu_model, detail.open_events, detail.health) == (
            node.gpu_count, node.gpu_model, node.open_events, node.health
        ), node.hostname


# The node list's filter selects as the template wrote them before (a loop per select, the
# form's value read again for each option).
OLD_FILTER_SELECTS = """{% with chosen=filters.form.site.value %}{% for value, label in site_choices %}<option value="{{ value }}"{% if chosen == value %} selected{% endif %}>{{ label }}</option>{% endfor %}{% endwith %}
{% for value, label in filters.form.fields.model.choices %}{% if value %}<option value="{{ value }}"{% if filters.form.model.value == value %} selected{% endif %}>{{ label }}</option>{% endif %}{% endfor %}
{% for value, label in states %}<option value="{{ value }}"{% if value in filters.form.state.value %} selected{% endif %}>{{ label }}</option>{% endfor %}
{% for value, label in filters.form.fields.health.choices %}{% if value %}<option value="{{ value }}"{% if filters.form.health.value == value %} selected{% endif %}>{{ label }}</option>{% endif %}{% endfor %}
{% for slug in reserved_tenants %}<option value="{{ slug }}"{% if filters.form.reserved_for.value == slug %} selected{% endif %}>{{ slug }}</option>{% endfor %}"""  # noqa: E501


@pytest.mark.django_db
@pytest.mark.parametrize("query", [
    "", "site=bulk1", "site=<b>", "model=nvidia-l40s", "state=maintenance&state=cordoned",
    "state=available", "health=critical", "reserved_for=nova&q=x", "reserved_for=<i>%26co",
])
def test_node_list_filter_selects_are_what_the_template_wrote(login, platform_admin, query):
    from django.template import engines

    build_fleet(3)
    SiteFactory(slug="s-&-q", name='"Quoted" & <site>')
    NodeFactory(hostname="lonely-1", reserved_for="<i>&co")
    NodeFactory(hostname="lonely-2", reserved_for="nova")
    response = login(platform_admin).get(f"/fleet/nodes/?{query}")
    page = response.content.decode()

    context = {name: response.context[name]
               for name in ("filters", "site_choices", "states", "reserved_tenants")}
    old = engines["django"].from_string(OLD_FILTER_SELECTS).render(context)
    for select in old.split("\n"):
        assert select in page
    assert page.count(" selected>") == old.count(" selected>")
