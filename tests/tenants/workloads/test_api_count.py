"""The workloads API's count is kept under the workloads' and tenants' stamps: asked again with
nothing written it is not counted again; any write, another filter or other visible tenants
count anew, and the count is always the rows there are."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants.models import Membership, RoleAssignment
from tenants.workloads.models import Workload, WorkloadStatus
from tests.factories import MembershipFactory, RoleAssignmentFactory, TenantFactory, UserFactory

# Committed writes: a transaction that wrote is never served from the cache.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fleet():
    acme, globex = TenantFactory(slug="acme"), TenantFactory(slug="globex")
    for i in range(3):
        Workload.objects.create(tenant=acme, kind="vcluster", name=f"dev-{i}")
    Workload.objects.create(tenant=acme, kind="inference", name="chat")
    Workload.objects.create(tenant=globex, kind="vcluster", name="theirs")
    admin = RoleAssignmentFactory(role=RoleAssignment.Role.PLATFORM_ADMIN).user
    member = MembershipFactory(tenant=acme, user=UserFactory(), role=Membership.Role.MEMBER).user
    return {"acme": acme, "globex": globex, "admin": admin, "member": member}


def _count(client, query: str = "") -> tuple[int, bool]:
    """The API's count, and whether the request counted rows in the database."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/api/v1/workloads/?page_size=1{query}")
    assert response.status_code == 200, response.content[:300]
    counted = any("COUNT(" in q["sql"] and "tenants_workload" in q["sql"]
                  for q in queries.captured_queries)
    return response.json()["count"], counted


def test_the_same_list_is_not_counted_again_until_a_workload_is_written(api_client, fleet):
    api_client.force_login(fleet["admin"])

    assert _count(api_client) == (5, True)
    assert _count(api_client) == (5, False)
    assert _count(api_client, "&page=2") == (5, False)  # the page is not part of the count

    Workload.objects.create(tenant=fleet["globex"], kind="vm", name="box")
    assert _count(api_client) == (6, True)
    Workload.objects.filter(name="box").update(status=WorkloadStatus.DELETED)
    assert _count(api_client) == (5, True)
    assert _count(api_client, "&status=deleted") == (1, True)
    assert _count(api_client, "&status=deleted") == (1, False)


def test_filters_and_visible_tenants_count_apart(api_client, fleet):
    api_client.force_login(fleet["admin"])
    assert _count(api_client) == (5, True)
    assert _count(api_client, "&kind=vcluster") == (4, True)
    assert _count(api_client, "&tenant=globex") == (1, True)

    api_client.force_login(fleet["member"])  # sees acme only
    assert _count(api_client) == (4, True)
    assert _count(api_client, "&kind=vcluster") == (3, True)
    assert _count(api_client, "&tenant=globex") == (0, True)
    assert _count(api_client, "&kind=vcluster") == (3, False)

    # A new membership is read on every request: the member's count is of the tenants seen now.
    MembershipFactory(tenant=fleet["globex"], user=fleet["member"], role=Membership.Role.VIEWER)
    assert _count(api_client) == (5, True)
