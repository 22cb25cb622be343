"""The node and quota request list APIs write each row once per set of values it shows
(portal.cached_rows), as the workload list does: their rows are always DRF's own rows of the
objects as they are now, whichever value changed (a request's lines included), and a list
asked again builds no row again."""

import datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework import serializers

from inventory.api import views as inventory_api
from inventory.api.serializers import NodeListSerializer
from inventory.models import GPU, Node, Rack, Site
from inventory.selectors.nodes import nodes_for_list
from portal.cached_rows import CachedRows
from tenants.models import Tenant
from tenants.quota import api as quota_api
from tenants.quota.models import QuotaRequest, QuotaRequestLine
from tenants.quota.selectors import quota_requests_listed_to, quota_requests_visible_to
from tenants.quota.serializers import QuotaRequestSerializer
from tests.factories import GPUFactory, NodeFactory

pytestmark = pytest.mark.django_db


def _listed(client, path: str) -> dict[int, dict]:
    response = client.get(path)
    assert response.status_code == 200, response.content[:300]
    return {row["id"]: row for row in response.json()["results"]}


def _stock(serializer_class, objects) -> dict[int, dict]:
    """DRF's own rows of `objects` (their relations joined, not annotated)."""
    serializer = serializer_class()
    return {obj.pk: serializers.Serializer.to_representation(serializer, obj) for obj in objects}


# --- nodes -----------------------------------------------------------------------------------


@pytest.fixture
def nodes():
    racked = NodeFactory(hostname="gpu-a")
    GPUFactory(node=racked, index=0)
    GPUFactory(node=racked, index=1)
    loose = NodeFactory(hostname="gpu-b", rack=None, position=None, reserved_for="nova")
    return [racked, loose]


NODE_CHANGES = {
    "state": lambda n: Node.objects.filter(pk=n.pk).update(state="cordoned"),
    "hostname": lambda n: Node.objects.filter(pk=n.pk).update(hostname="gpu-renamed"),
    "reserved for": lambda n: Node.objects.filter(pk=n.pk).update(reserved_for="orion"),
    "seen": lambda n: Node.objects.filter(pk=n.pk).update(
        k8s_last_seen_at=timezone.now() - datetime.timedelta(minutes=3), k8s_ready=True),
    "rack name": lambda n: Rack.objects.filter(pk=n.rack_id).update(name="r-renamed"),
    "site slug": lambda n: Site.objects.filter(racks__id=n.rack_id).update(slug="elsewhere"),
    "a GPU more": lambda n: GPUFactory(node=n, index=2),
    "GPU model": lambda n: GPU.objects.filter(node=n).update(model="nvidia-a100-80gb"),
}


def _nodes_now() -> dict[int, dict]:
    return _stock(NodeListSerializer, nodes_for_list())


@pytest.mark.parametrize("change", NODE_CHANGES)
def test_a_listed_node_follows_each_value_it_shows(api_client, nodes, platform_admin, change):
    api_client.force_authenticate(platform_admin)
    before = _listed(api_client, "/api/v1/nodes/")
    assert before == _nodes_now()

    NODE_CHANGES[change](nodes[0])
    after = _listed(api_client, "/api/v1/nodes/")

    assert after == _nodes_now()
    assert after[nodes[0].pk] != before[nodes[0].pk]
    assert after[nodes[1].pk] == before[nodes[1].pk]


def test_the_node_list_asked_again_builds_no_row_again(api_client, nodes, platform_admin):
    api_client.force_authenticate(platform_admin)
    first = _listed(api_client, "/api/v1/nodes/")
    built = len(inventory_api._LISTED_ROWS.memo)

    again = _listed(api_client, "/api/v1/nodes/")
    filtered = _listed(api_client, "/api/v1/nodes/?state=available")

    assert again == first == _nodes_now()
    assert len(inventory_api._LISTED_ROWS.memo) == built  # the filtered rows were listed too
    assert filtered == {pk: row for pk, row in first.items() if row["state"] == "available"}


# --- quota requests ----------------------------------------------------------------------------


@pytest.fixture
def quota_requests(tenant, other_tenant, platform_admin):
    made = []
    for n in range(3):
        quota_request = QuotaRequest.objects.create(
            tenant=(tenant, other_tenant)[n % 2], requested_by=platform_admin if n else None,
            justification=f"for run {n}",
        )
        QuotaRequestLine.objects.create(request=quota_request, resource="cpu", amount=n + 1)
        QuotaRequestLine.objects.create(request=quota_request, resource="memory-gib",
                                        amount=8 * (n + 1))
        made.append(quota_request)
    return made


REQUEST_CHANGES = {
    "status": lambda r, admin: QuotaRequest.objects.filter(pk=r.pk).update(
        status="approved", decided_by=admin, decided_at=timezone.now(), decision_note="ok"),
    "justification": lambda r, admin: QuotaRequest.objects.filter(pk=r.pk).update(
        justification="more, please"),
    "a line's amount": lambda r, admin: QuotaRequestLine.objects.filter(
        request=r, resource="cpu").update(amount=64),
    "a line approved": lambda r, admin: QuotaRequestLine.objects.filter(
        request=r, resource="cpu").update(approved_amount=1, limit_before=0, limit_after=1),
    "a line more": lambda r, admin: QuotaRequestLine.objects.create(
        request=r, resource="storage-gib", amount=100),
    "tenant slug": lambda r, admin: Tenant.objects.filter(pk=r.tenant_id).update(
        slug="renamed"),
    "requester": lambda r, admin: get_user_model().objects.filter(
        pk=r.requested_by_id).update(username="someone-else"),
}


def _requests_now(user) -> dict[int, dict]:
    return _stock(QuotaRequestSerializer, quota_requests_visible_to(user))


@pytest.mark.parametrize("change", REQUEST_CHANGES)
def test_a_listed_request_follows_each_value_it_shows(
    api_client, quota_requests, platform_admin, change
):
    api_client.force_authenticate(platform_admin)
    before = _listed(api_client, "/api/v1/quota-requests/")
    assert before == _requests_now(platform_admin)

    REQUEST_CHANGES[change](quota_requests[1], platform_admin)
    after = _listed(api_client, "/api/v1/quota-requests/")

    assert after == _requests_now(platform_admin)
    assert after[quota_requests[1].pk] != before[quota_requests[1].pk]


def test_the_request_list_asked_again_builds_no_row_again(
    api_client, quota_requests, platform_admin, tenant_member
):
    api_client.force_authenticate(platform_admin)
    first = _listed(api_client, "/api/v1/quota-requests/")
    built = len(quota_api._LISTED_ROWS.memo)

    with CaptureQueriesContext(connection) as queries:
        again = _listed(api_client, "/api/v1/quota-requests/")

    assert again == first == _requests_now(platform_admin)
    assert len(quota_api._LISTED_ROWS.memo) == built
    assert sum("tenants_quotarequest" in q["sql"] for q in queries.captured_queries) <= 2

    api_client.force_authenticate(tenant_member)  # their tenant's requests only
    assert set(_listed(api_client, "/api/v1/quota-requests/")) == {
        r.pk for r in quota_requests if r.tenant.slug == "acme"
    }


def test_a_row_key_holds_its_lines_as_their_text(quota_requests, platform_admin):
    rows = CachedRows(QuotaRequest)
    values = rows.values(quota_requests_listed_to(platform_admin))
    lines_at = len(values.fields) + values.annotations.index("lines_prefetched")
    row_values = values.queryset.first()

    assert values.unhashable == (lines_at,)
    assert isinstance(row_values[lines_at], list)
    hash(values.key(row_values))  # a key, whatever its lines
    assert values.key(row_values)[lines_at] == values.key(tuple(row_values))[lines_at]
