"""Capacity is the pool a tenant schedules on: a dedicated tenant's reserved nodes, or the
shared pool (nodes reserved for nobody). Previews, the admin review, bulk decisions and the
tenant's quota page all compare against it, never against the whole fleet."""

import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from inventory.models import GPU, NodeState
from inventory.selectors.capacity import SHARED_POOL
from tenants.models import Membership, QuotaRequest, Tenant
from tenants.quota import services as quota_requests
from tenants.quota.capacity import (
    capacity_by_resource_class,
    pool_capacity_by_resource_class,
    tenant_capacity_by_resource_class,
)
from tenants.quota.selectors import quota_preview
from tests.factories import (
    GPUFactory,
    MembershipFactory,
    NodeFactory,
    QuotaFactory,
    TenantFactory,
    UserFactory,
)

H200 = "gpu:nvidia-h200"
X = "\N{MULTIPLICATION SIGN}"
CHANGELIST = reverse("admin:tenants_quotarequest_changelist")


def _h200_nodes(count: int, reserved_for: str = "", **fields) -> list:
    nodes = []
    for _ in range(count):
        node = NodeFactory(reserved_for=reserved_for, cpu_cores=100, memory_gib=1000, **fields)
        for i in range(8):
            GPUFactory(node=node, index=i, model="nvidia-h200")
        nodes.append(node)
    return nodes


@pytest.fixture
def helix(db):
    """A dedicated tenant holding 32 H200s of quota on its 4 reserved nodes (32 H200s)."""
    tenant = TenantFactory(slug="helix", name="Helix", isolation=Tenant.Isolation.DEDICATED)
    QuotaFactory(tenant=tenant, resource=H200, limit=32)
    return tenant


@pytest.fixture
def helix_member(helix):
    user = UserFactory(username="helix-dev")
    MembershipFactory(tenant=helix, user=user, role=Membership.Role.MEMBER)
    return user


@pytest.fixture
def fleet(helix, tenant):
    """Helix: 4 reserved nodes; another dedicated tenant: 2; the shared pool: 6 nodes, one of
    them in maintenance and one GPU failed. Acme (shared) holds 16 H200s."""
    _h200_nodes(4, reserved_for="helix")
    _h200_nodes(2, reserved_for="orbit")
    shared = _h200_nodes(5)
    _h200_nodes(1, state=NodeState.MAINTENANCE)
    GPU.objects.filter(node=shared[0], index=0).update(health=GPU.Health.FAILED)
    QuotaFactory(tenant=tenant, resource=H200, limit=16)


def test_each_pool_counts_only_its_own_nodes_and_the_fleet_is_their_sum(fleet, helix, tenant):
    helix_h200 = tenant_capacity_by_resource_class(tenant=helix)[H200]
    assert (helix_h200.installed, helix_h200.healthy, helix_h200.granted) == (32, 32, 32)
    assert helix_h200.pool_label == "nodes reserved for helix"

    shared_h200 = tenant_capacity_by_resource_class(tenant=tenant)[H200]
    # Reserved nodes are tainted against everyone else: not in the shared pool.
    assert (shared_h200.installed, shared_h200.healthy, shared_h200.granted) == (48, 39, 16)
    assert shared_h200.reserved == 0
    assert tenant_capacity_by_resource_class(tenant=tenant)["cpu"].healthy == 500

    fleet_h200 = {row.resource: row for row in capacity_by_resource_class()}[H200]
    assert (fleet_h200.installed, fleet_h200.healthy, fleet_h200.reserved) == (96, 87, 48)
    assert fleet_h200.granted == 48


def test_a_dedicated_tenant_without_reserved_nodes_has_no_capacity(db):
    lonely = TenantFactory(slug="lonely", isolation=Tenant.Isolation.DEDICATED)
    _h200_nodes(2)
    row = tenant_capacity_by_resource_class(tenant=lonely)[H200]
    assert (row.healthy, row.free(extra=8)) == (0, -8)


def test_the_preview_of_a_dedicated_tenant_compares_with_its_reserved_nodes(fleet, helix):
    (line,) = quota_preview(tenant=helix, lines=[(H200, 24)])
    assert (line.current, line.resulting, line.capacity.healthy) == (32, 56, 32)
    assert (line.capacity.granted, line.granted_after) == (32, 56)
    assert (line.ratio_before, line.ratio_after) == (Decimal("1.00"), Decimal("1.75"))
    assert line.fits is False and line.beyond_pool is True


def test_the_admin_review_of_a_dedicated_tenant_shows_its_reserved_capacity(
    fleet, helix, helix_member, submit, login, platform_admin
):
    request = submit({H200: 24}, by=helix_member, target=helix)
    html = (
        login(platform_admin)
        .get(reverse("admin:tenants_quotarequest_change", args=[request.pk]))
        .content.decode()
    )
    row = re.search(rf'<tr data-resource="{H200}">.*?</tr>', html, re.S).group(0)
    text = " ".join(re.sub(r"<[^>]+>", " ", row).split())
    assert "more than the 32 healthy on nodes reserved for helix" in text
    assert "32 nodes reserved for helix" in text
    assert "32 → 56" in text and f"1.00{X} → 1.75{X}" in text
    assert "87" not in text  # the fleet's healthy H200s are not what helix can run on


def test_the_tenant_preview_page_and_api_use_the_same_pool(
    fleet, helix, helix_member, login, api_client
):
    client = login(helix_member)
    html = client.post(
        reverse("tenants:quota-request-preview", args=["helix"]),
        {
            "lines-TOTAL_FORMS": "1",
            "lines-INITIAL_FORMS": "0",
            "lines-0-resource": H200,
            "lines-0-amount": "24",
        },
    ).content.decode()
    assert "32 healthy on nodes reserved for helix" in html
    assert "56 is more than can be scheduled" in html
    api_client.force_login(helix_member)
    body = api_client.post(
        "/api/v1/quota-requests/preview/",
        {"tenant": "helix", "lines": [{"resource": H200, "amount": 24}]},
        format="json",
    ).json()
    assert (body[0]["healthy"], body[0]["granted"], body[0]["fits"]) == (32, 32, False)


def test_the_quota_page_says_how_much_can_really_be_scheduled(
    fleet, helix, helix_member, tenant, tenant_member, login
):
    QuotaFactory(tenant=helix, resource="cpu", limit=100)
    helix.quotas.filter(resource=H200).update(limit=56)
    html = login(helix_member).get(reverse("tenants:quota-detail", args=["helix"])).content
    card = re.search(r'<div class="card mb-4" id="schedulable">.*?</table>', html.decode(), re.S)
    text = " ".join(re.sub(r"<[^>]+>", " ", card.group(0)).split())
    assert "only on the nodes reserved for Helix" in text
    assert "At most 32 of your 56 NVIDIA H200" in text
    assert "24 more than your reserved nodes hold healthy" in text
    assert "CPU" in text or "vCPU" in text
    assert text.count("At most") == 1  # 100 vCPUs fit the 400 on its nodes: no note

    html = login(tenant_member).get(reverse("tenants:quota-detail", args=["acme"])).content
    card = re.search(r'id="schedulable">.*?</div>\s*</div>', html.decode(), re.S).group(0)
    text = " ".join(re.sub(r"<[^>]+>", " ", card).split())
    assert "shared pool" in text and "At most" not in text
    assert re.search(r"16 39 of 48", text)


# --- bulk decisions -------------------------------------------------------------------------


def _waiting(n: int, tenant, member, resource=H200, amount=4) -> list[QuotaRequest]:
    return [
        quota_requests.quota_request_create(
            tenant=tenant,
            requested_by=member,
            lines=[{"resource": resource, "amount": amount}],
            justification="more",
        )
        for _ in range(n)
    ]


def _bulk_page(client, action: str, requests) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.post(
            CHANGELIST, {"action": action, "_selected_action": [r.pk for r in requests]}
        )
    assert response.status_code == 200
    return response.content.decode(), len(queries.captured_queries)


def test_bulk_approval_shows_the_impact_per_pool_before_deciding(
    fleet, helix, helix_member, tenant, tenant_member, login, platform_admin
):
    client = login(platform_admin)
    helix_request = _waiting(1, helix, helix_member, amount=24)[0]
    acme_requests = _waiting(2, tenant, tenant_member, amount=10)
    decided = _waiting(1, tenant, tenant_member)[0]
    quota_requests.quota_request_reject(request_id=decided.pk, approver=platform_admin, reason="no")

    html, _ = _bulk_page(client, "approve_selected", [helix_request, *acme_requests, decided])

    rows = dict(
        re.findall(r'<tr data-resource="[^"]+" data-request="(\d+)">(.*?)</tr>', html, re.S)
    )

    def text(pk):
        return " ".join(re.sub(r"<[^>]+>", " ", rows[str(pk)]).split())

    assert "32 → 56" in text(helix_request.pk) and f"1.00{X} → 1.75{X}" in text(helix_request.pk)
    assert "nodes reserved for helix" in text(helix_request.pk)

    # Both of acme's requests land in the shared pool: each row shows the pool after both.
    def cells(pk):
        return [
            " ".join(re.sub(r"<[^>]+>", " ", c).split())
            for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[str(pk)], re.S)
        ]

    first, second = (text(r.pk) for r in acme_requests)
    # request, resource, quota now, in use, asked, quota after: the second starts where the
    # first ends, as approving them in order would.
    assert cells(acme_requests[0].pk)[2:6] == ["16", "0", "+10", "26"]
    assert cells(acme_requests[1].pk)[2:6] == ["26", "0", "+10", "36"]
    assert "16 → 36" in first and "16 → 36" in second
    assert "39 (48) the shared pool" in first
    assert str(decided.pk) not in rows and f"#{decided.pk}" in html  # listed as not waiting
    assert not QuotaRequest.objects.filter(status=QuotaRequest.Status.APPROVED).exists()


@pytest.mark.parametrize("action", ["approve_selected", "reject_selected"])
def test_bulk_impact_takes_the_same_queries_for_2_and_20_requests(
    action, fleet, helix, helix_member, tenant, tenant_member, login, platform_admin
):
    client = login(platform_admin)
    others = [TenantFactory(slug=f"other-{i}") for i in range(10)]
    owners = {}
    for other in others:
        owners[other.pk] = UserFactory()
        MembershipFactory(tenant=other, user=owners[other.pk], role=Membership.Role.OWNER)

    small = _waiting(1, helix, helix_member) + _waiting(1, tenant, tenant_member)
    client.post(CHANGELIST, {"action": action, "_selected_action": [small[0].pk]})  # warm up
    html, few = _bulk_page(client, action, small)
    assert html.count("data-request=") == 2

    large = small + _waiting(8, tenant, tenant_member, resource="cpu")
    for other in others:
        large += _waiting(1, other, owners[other.pk])
    html, many = _bulk_page(client, action, large)
    assert len(large) == 20 and html.count("data-request=") == 20
    assert many == few


def test_the_impact_is_the_same_table_on_the_single_review(
    fleet, tenant, tenant_member, login, platform_admin
):
    (request,) = _waiting(1, tenant, tenant_member, amount=10)
    client = login(platform_admin)
    single = client.get(reverse("admin:tenants_quotarequest_change", args=[request.pk]))
    bulk, _ = _bulk_page(client, "approve_selected", [request])
    header = re.compile(
        r'<table id="review-lines" class="impact-table">\s*<thead>(.*?)</thead>', re.S
    )
    single_columns = re.findall(
        r"<th[^>]*>(.*?)</th>", header.search(single.content.decode()).group(1)
    )
    bulk_columns = re.findall(r"<th[^>]*>(.*?)</th>", header.search(bulk).group(1))
    # The same columns; the bulk table names the request, the single one lets you change it.
    assert bulk_columns[0] == "Request" and single_columns[4] == "Grant"
    assert [c for c in single_columns if c != "Grant"] == bulk_columns[1:]


def test_pools_are_counted_in_fixed_queries(fleet, helix, django_assert_num_queries):
    with django_assert_num_queries(4):
        pools = pool_capacity_by_resource_class(pools=["helix", "orbit", SHARED_POOL])
    assert pools["orbit"][H200].healthy == 16 and pools["orbit"][H200].granted == 0
