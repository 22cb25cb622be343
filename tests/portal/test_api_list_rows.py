"""The list APIs read only what their rows show (`only()`, joined and prefetched relations), and a
client gets the same row from a list as from the object's own URL: after any value it shows
changes, in any time zone, with links for the host and scheme it asked on."""

import datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import GPU, Node, Rack, Site
from tenants.models import Tenant
from tenants.quota.models import QuotaRequest, QuotaRequestLine
from tenants.workloads.models import Workload, WorkloadStatus
from tests.factories import GPUFactory, NodeFactory

pytestmark = pytest.mark.django_db

WORKLOADS = "/api/v1/workloads/"
REQUESTS = "/api/v1/quota-requests/"
NODES = "/api/v1/nodes/"
WHEN = datetime.datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=datetime.UTC)


def _listed(client, path: str, **extra) -> dict[int, dict]:
    response = client.get(path, **extra)
    assert response.status_code == 200, response.content[:300]
    return {row["id"]: row for row in response.json()["results"]}


def _detail(client, path: str, pk: int, **extra) -> dict:
    response = client.get(f"{path}{pk}/", **extra)
    assert response.status_code == 200, response.content[:300]
    return response.json()


# --- workloads ---------------------------------------------------------------------------------


@pytest.fixture
def workloads(tenant, other_tenant, platform_admin):
    made = []
    for n, status in enumerate([WorkloadStatus.READY, WorkloadStatus.FAILED, "failed"]):
        made.append(Workload.objects.create(
            tenant=(tenant, other_tenant)[n % 2], kind=("inference", "vm", "vcluster")[n],
            name=f"w-{n}", status=status, spec={"replicas": n, "image": "x"},
            demand={"gpu:nvidia-h100-80gb": n + 1}, launched_by=platform_admin if n else None,
            observed={"connection": {"items": [["URL", f"http://x/{n}"], ["odd"]],
                                     "commands": [["ssh", "ssh a"]], "notes": ["n", 3]},
                      "details": {"replicas": n}, "conditions": [{"type": "Ready"}]},
            observation_recorded_at=WHEN, ready_at=WHEN if n == 0 else None,
            reconcile_error="boom" * n,
        ))
    return made


def _workloads_agree(client, workloads, **extra) -> dict[int, dict]:
    details = {w.pk: _detail(client, WORKLOADS, w.pk, **extra) for w in workloads}
    listed = _listed(client, WORKLOADS, **extra)
    assert listed == details
    return listed


WORKLOAD_CHANGES = {
    "status": lambda w: Workload.objects.filter(pk=w.pk).update(status="deleting"),
    "spec": lambda w: Workload.objects.filter(pk=w.pk).update(spec={"replicas": 9}),
    "demand": lambda w: Workload.objects.filter(pk=w.pk).update(demand={"cpu": 4}),
    "observed": lambda w: Workload.objects.filter(pk=w.pk).update(
        observed={"details": {"ip": "10.0.0.9"}}),
    "reconcile": lambda w: Workload.objects.filter(pk=w.pk).update(
        applied_version=7, desired_version=7, reconcile_error=""),
    "ready_at": lambda w: Workload.objects.filter(pk=w.pk).update(
        ready_at=WHEN - datetime.timedelta(days=1)),
    "tenant slug": lambda w: Tenant.objects.filter(pk=w.tenant_id).update(slug="renamed"),
    "launcher": lambda w: get_user_model().objects.filter(pk=w.launched_by_id).update(
        username="someone-else"),
}


@pytest.mark.parametrize("change", WORKLOAD_CHANGES)
def test_a_listed_workload_is_its_own_page_after_each_change(
    api_client, workloads, platform_admin, change
):
    api_client.force_authenticate(platform_admin)
    before = _workloads_agree(api_client, workloads)

    WORKLOAD_CHANGES[change](workloads[1])
    after = _workloads_agree(api_client, workloads)

    assert after[workloads[1].pk] != before[workloads[1].pk]
    assert after[workloads[0].pk] == before[workloads[0].pk]


def test_a_listed_workload_shows_labels_links_and_its_connection(
    api_client, workloads, platform_admin, settings
):
    settings.ALLOWED_HOSTS = ["*"]
    api_client.force_authenticate(platform_admin)
    first = workloads[0]

    plain = _workloads_agree(api_client, workloads)[first.pk]
    elsewhere = _workloads_agree(api_client, workloads, HTTP_HOST="portal.example.org:8443",
                                 secure=True)[first.pk]

    assert plain["url"] == f"http://testserver/api/v1/workloads/{first.pk}/"
    assert elsewhere["url"] == f"https://portal.example.org:8443/api/v1/workloads/{first.pk}/"
    assert (plain["status_label"], plain["kind_label"]) == ("Ready", "Inference endpoint")
    assert (plain["tenant"], plain["launched_by"]) == ("acme", None)
    assert plain["connection"] == {
        "items": [{"label": "URL", "value": "http://x/0"}],
        "commands": [{"label": "ssh", "command": "ssh a"}],
        "notes": ["n", "3"],
    }


def test_listed_times_are_written_in_the_current_time_zone(
    api_client, workloads, platform_admin, settings
):
    api_client.force_authenticate(platform_admin)
    utc = _workloads_agree(api_client, workloads)
    settings.TIME_ZONE = "America/New_York"
    new_york = _workloads_agree(api_client, workloads)

    first = workloads[0].pk
    assert utc[first]["ready_at"] == "2026-03-04T05:06:07.000890Z"
    assert new_york[first]["ready_at"] == "2026-03-04T00:06:07.000890-05:00"


def test_a_member_lists_their_tenants_rows_only(
    api_client, workloads, tenant, other_tenant, tenant_member, finance
):
    QuotaRequest.objects.create(tenant=tenant, justification="more")
    QuotaRequest.objects.create(tenant=other_tenant, justification="more")

    api_client.force_authenticate(tenant_member)
    assert {row["tenant"] for row in _listed(api_client, WORKLOADS).values()} == {"acme"}
    assert {row["tenant"] for row in _listed(api_client, REQUESTS).values()} == {"acme"}
    assert _listed(api_client, f"{WORKLOADS}?tenant={other_tenant.slug}") == {}

    api_client.force_authenticate(finance)  # sees every tenant
    assert len(_listed(api_client, WORKLOADS)) == len(workloads)
    assert len(_listed(api_client, REQUESTS)) == 2


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
        QuotaRequestLine.objects.create(request=quota_request, resource="gpu:nvidia-h200",
                                        amount=8 * (n + 1))
        made.append(quota_request)
    return made


REQUEST_CHANGES = {
    "status": lambda r, admin: QuotaRequest.objects.filter(pk=r.pk).update(
        status="approved", decided_by=admin, decided_at=WHEN, decision_note="ok"),
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


def _requests_agree(client, quota_requests) -> dict[int, dict]:
    listed = _listed(client, REQUESTS)
    assert listed == {r.pk: _detail(client, REQUESTS, r.pk) for r in quota_requests}
    return listed


@pytest.mark.parametrize("change", REQUEST_CHANGES)
def test_a_listed_request_is_its_own_page_after_each_change(
    api_client, quota_requests, platform_admin, change
):
    api_client.force_authenticate(platform_admin)
    before = _requests_agree(api_client, quota_requests)

    REQUEST_CHANGES[change](quota_requests[1], platform_admin)
    after = _requests_agree(api_client, quota_requests)

    assert after[quota_requests[1].pk] != before[quota_requests[1].pk]
    assert after[quota_requests[0].pk] == before[quota_requests[0].pk]


def test_a_listed_request_shows_its_lines_in_the_order_asked(
    api_client, quota_requests, platform_admin
):
    api_client.force_authenticate(platform_admin)
    row = _requests_agree(api_client, quota_requests)[quota_requests[2].pk]

    assert (row["tenant"], row["requested_by"], row["decided_by"]) == (
        "acme", platform_admin.username, None)
    assert row["lines"] == [
        {"resource": "cpu", "label": "vCPU", "amount": 3, "approved_amount": None,
         "limit_before": None, "limit_after": None},
        {"resource": "gpu:nvidia-h200", "label": "NVIDIA H200 141GB GPUs", "amount": 24,
         "approved_amount": None, "limit_before": None, "limit_after": None},
    ]


def test_a_later_page_reads_the_lines_of_its_own_requests_only(
    api_client, quota_requests, platform_admin
):
    api_client.force_authenticate(platform_admin)
    api_client.get(REQUESTS)
    with CaptureQueriesContext(connection) as first:
        api_client.get(f"{REQUESTS}?page_size=1")
    with CaptureQueriesContext(connection) as later:
        page = _listed(api_client, f"{REQUESTS}?page_size=1&page=3")

    assert list(page) == [quota_requests[0].pk]  # newest first
    lines = [q["sql"] for q in later.captured_queries if "tenants_quotarequestline" in q["sql"]]
    assert len(lines) == 1 and f"IN ({quota_requests[0].pk})" in lines[0]
    assert len(later.captured_queries) == len(first.captured_queries)


# --- nodes -------------------------------------------------------------------------------------


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


def _nodes_agree(client, nodes) -> dict[int, dict]:
    listed = _listed(client, NODES)
    for node in nodes:
        detail = _detail(client, NODES, node.pk)
        assert listed[node.pk] == {key: detail[key] for key in listed[node.pk]}
    return listed


@pytest.mark.parametrize("change", NODE_CHANGES)
def test_a_listed_node_is_its_own_page_after_each_change(
    api_client, nodes, platform_admin, change
):
    api_client.force_authenticate(platform_admin)
    before = _nodes_agree(api_client, nodes)

    NODE_CHANGES[change](nodes[0])
    after = _nodes_agree(api_client, nodes)

    assert after[nodes[0].pk] != before[nodes[0].pk]
    assert after[nodes[1].pk] == before[nodes[1].pk]


def test_a_listed_node_names_its_rack_and_site_or_none(api_client, nodes, platform_admin):
    api_client.force_authenticate(platform_admin)
    listed = _nodes_agree(api_client, nodes)
    racked, loose = (listed[node.pk] for node in nodes)

    assert (racked["rack"], racked["site"]) == (nodes[0].rack.name, nodes[0].rack.site.slug)
    assert (loose["rack"], loose["site"]) == (None, None)
    assert (racked["gpu_count"], racked["gpu_model"]) == (2, "nvidia-h100-80gb")
    assert "k8s_labels" not in racked  # the cluster sync's documents: the node's own page only
