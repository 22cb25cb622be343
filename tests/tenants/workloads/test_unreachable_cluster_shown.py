"""A workload whose cluster does not answer shows Unknown, since when and why — on its page, in
the workload list, on the dashboard, in Django admin and in the API (whose `status` stays the
last one seen) — and the lists read the clusters in the same queries, however many rows."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.fleet import TransientFleetError
from inventory.models import Cluster
from inventory.services.reachability import cluster_mark_unreachable
from tenants.workloads.models import Workload, WorkloadStatus

pytestmark = pytest.mark.django_db

REFUSED = "NewConnectionError: Failed to establish a new connection: [Errno 111] refused"


@pytest.fixture
def east(db):
    Cluster.objects.create(slug="east", name="East hall")
    cluster_mark_unreachable(cluster="east", error=TransientFleetError(REFUSED))
    return Cluster.objects.get(slug="east")


def _workload(tenant, name: str, cluster: str, status=WorkloadStatus.READY) -> Workload:
    launcher = tenant.memberships.select_related("user").first()
    return Workload.objects.create(tenant=tenant, kind="vcluster", name=name, cluster_id=cluster,
                                   status=status, launched_by=launcher and launcher.user)


def test_the_page_list_and_dashboard_say_unknown_since_when_and_why(
    login, tenant, tenant_member, east
):
    lost = _workload(tenant, "lost", "east")
    fine = _workload(tenant, "fine", "main")
    client = login(tenant_member)
    since = east.unreachable_since.strftime("%Y-%m-%d %H:%M UTC")
    expected = f"Unknown — cluster East hall unreachable since {since}: {REFUSED}"

    page = client.get(f"/t/{tenant.slug}/workloads/{lost.pk}/").content.decode()
    assert 'id="cluster-unreachable"' in page and expected in page
    assert 'data-status="unknown"' in page and "Last seen ready." in page

    listing = client.get(f"/t/{tenant.slug}/workloads/").content.decode()
    lost_row = listing[listing.index(f'id="workload-{lost.pk}"'):]
    lost_row = lost_row[: lost_row.index("</tr>")]
    fine_row = listing[listing.index(f'id="workload-{fine.pk}"'):]
    fine_row = fine_row[: fine_row.index("</tr>")]
    assert 'data-status="unknown"' in lost_row and "cluster East hall unreachable" in lost_row
    assert 'data-status="ready"' in fine_row and "unreachable" not in fine_row

    dashboard = client.get(f"/t/{tenant.slug}/").content.decode()
    item = dashboard[dashboard.index(f'id="dashboard-workload-{lost.pk}"'):]
    assert 'data-status="unknown"' in item[: item.index("</li>")]

    other = client.get(f"/t/{tenant.slug}/workloads/{fine.pk}/").content.decode()
    assert 'id="cluster-unreachable"' not in other


def test_the_api_keeps_the_status_and_says_why_it_is_unknown(api_client, tenant, tenant_member,
                                                             east):
    lost = _workload(tenant, "lost", "east", status=WorkloadStatus.PROVISIONING)
    _workload(tenant, "fine", "main")
    api_client.force_login(tenant_member)

    rows = {row["name"]: row for row in api_client.get("/api/v1/workloads/").json()["results"]}
    assert rows["lost"]["status"] == "provisioning"
    assert rows["lost"]["status_label"] == "Unknown"
    assert rows["lost"]["cluster_unreachable"] is True
    assert "cluster East hall unreachable since" in rows["lost"]["status_detail"]
    assert rows["lost"]["cluster"]["slug"] == "east"
    assert rows["lost"]["cluster"]["reachable"] is False
    assert rows["lost"]["cluster"]["unreachable_since"]
    assert rows["fine"]["cluster_unreachable"] is False and rows["fine"]["status_detail"] == ""
    assert rows["fine"]["cluster"] | {"slug": "main", "reachable": True} == rows["fine"]["cluster"]

    one = api_client.get(f"/api/v1/workloads/{lost.pk}/").json()
    assert one["cluster_unreachable"] is True and one["status"] == "provisioning"


def test_a_deleted_workload_or_a_retired_cluster_is_not_unknown(tenant, east):
    gone = _workload(tenant, "gone", "east", status=WorkloadStatus.DELETED)
    assert not gone.cluster_unreachable and gone.status_detail == ""
    Cluster.objects.filter(slug="east").update(state=Cluster.State.RETIRED)
    kept = Workload.objects.select_related("cluster").get(
        pk=_workload(tenant, "kept", "east").pk
    )
    assert not kept.cluster_unreachable


def test_django_admin_lists_it_as_unknown(client, platform_admin, tenant, east):
    _workload(tenant, "lost", "east")
    client.force_login(platform_admin)
    listing = client.get("/admin/tenants/workload/").content.decode()
    assert "status-unknown" in listing and "cluster East hall unreachable since" in listing


def _list_queries(client, tenant) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"/t/{tenant.slug}/workloads/").status_code == 200
    return len(queries)


def _api_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/workloads/").status_code == 200
    return len(queries)


def test_lists_read_the_clusters_with_the_rows(login, api_client, tenant, tenant_member, east):
    Cluster.objects.create(slug="west", name="West hall")
    _workload(tenant, "a-0", "east")
    _workload(tenant, "b-0", "west")
    client = login(tenant_member)
    api_client.force_login(tenant_member)
    _list_queries(client, tenant), _api_queries(api_client)  # the session's first reads
    small_list, small_api = _list_queries(client, tenant), _api_queries(api_client)
    for i in range(1, 4):
        _workload(tenant, f"a-{i}", "east")
        _workload(tenant, f"b-{i}", "west")
        _workload(tenant, f"c-{i}", "main")
    assert _list_queries(client, tenant) == small_list
    assert _api_queries(api_client) == small_api
