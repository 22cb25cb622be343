"""The tenant's dashboard and a workload's page make a fixed, pinned number of queries, however
many workloads, requests and members the tenant has; the workload list's rows and the
dashboard's cards load only what they show."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants.models import Tenant
from tenants.quota import services as quota_requests
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus
from tests.factories import MembershipFactory, TenantFactory

from .conftest import H100, INFERENCE_SPEC

pytestmark = pytest.mark.django_db

# session, user, the user's roles and memberships in one query (every signed-in page; it also
# names the tenants of the switcher), then the page's own.
# For a tenant's people the page's tenant and the switcher's are one query.
DASHBOARD_QUERIES = 11  # tenant and switcher, held, quota with its temporary grants, GPUs
#                         queued, workloads, requests with their lines, members, idle GPUs
DETAIL_QUERIES = 7  # the workload with its tenant and launcher, timeline, its idle episode,
#                      an endpoint's API keys with their creators


def _launch(tenant, who, n: int, prefix: str) -> list[Workload]:
    return [
        services.workload_launch(
            tenant=tenant,
            actor=who,
            kind="inference",
            name=f"{prefix}-{i}",
            spec={**INFERENCE_SPEC, "max_replicas": 1},
        )
        for i in range(n)
    ]


def _ready(workloads) -> None:
    """As the controllers leave them: ready and applied (nothing for the page to look at)."""
    for w in workloads:
        Workload.objects.filter(pk=w.pk).update(
            status=WorkloadStatus.READY, applied_version=w.desired_version
        )


def _queued(workloads, *, gpus: int) -> None:
    """As an observation leaves them while Kueue holds their pods: each waits for `gpus`."""
    for w in workloads:
        Workload.objects.filter(pk=w.pk).update(
            status=WorkloadStatus.PROVISIONING, status_reason="Queued",
            observed={"state": "progressing", "details": {"queue": {
                "gpus": gpus, "position_in_local_queue": 1, "summary": "1st in the queue"}}},
        )


def _queries(client, url: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries), response.content.decode()


@pytest.fixture
def busy(tenant, tenant_member, gpu_pool, workload_quota, simulated_gateway):
    workload_quota(**{"count:inference": 40, H100: 40, "cpu": 400, "memory-gib": 4000})


def test_the_dashboard_makes_the_same_pinned_queries_at_any_size(
    login, tenant, tenant_member, busy
):
    client = login(tenant_member)
    _ready(_launch(tenant, tenant_member, 1, "one"))
    quota_requests.quota_request_create(
        tenant=tenant,
        requested_by=tenant_member,
        justification="More.",
        lines=[{"resource": "cpu", "amount": 8}],
    )
    client.get("/t/acme/")  # the first visit stores the current tenant in the session
    few, _ = _queries(client, "/t/acme/")
    assert few == DASHBOARD_QUERIES
    _ready(_launch(tenant, tenant_member, 8, "more"))
    for n in range(6):
        quota_requests.quota_request_create(
            tenant=tenant,
            requested_by=tenant_member,
            justification="More.",
            lines=[{"resource": "cpu", "amount": n + 1}, {"resource": H100, "amount": 1}],
        )
    MembershipFactory.create_batch(5, tenant=tenant)
    _queued(Workload.objects.filter(tenant=tenant, name__startswith="more"), gpus=1)
    more, html = _queries(client, "/t/acme/")
    assert more == few
    assert 'data-gpus-queued="8"' in html  # summed in the database, not per workload
    # Six workloads and five requests, each linked to its page.
    assert len(re.findall(r'id="dashboard-workload-\d+"', html)) == 6
    assert len(re.findall(r'<a href="/t/acme/workloads/\d+/">', html)) == 6
    assert (
        len(re.findall(r'href="/t/acme/quota/requests/\d+/" class="text-decoration-none"', html))
        == 5
    )


def test_a_ready_workloads_page_makes_pinned_queries(login, tenant, tenant_member, busy):
    client = login(tenant_member)
    (workload,) = _launch(tenant, tenant_member, 1, "chat")
    _ready([workload])
    url = f"/t/acme/workloads/{workload.pk}/"
    client.get(url)
    count, html = _queries(client, url)
    assert count == DETAIL_QUERIES
    launcher = tenant_member.get_full_name() or tenant_member.username
    assert f"UTC by {launcher}</dd>" in html and 'data-status="ready"' in html


def test_a_queued_workloads_page_makes_the_same_pinned_queries(
    login, tenant, tenant_member, busy
):
    client = login(tenant_member)
    (workload,) = _launch(tenant, tenant_member, 1, "chat")
    _ready([workload])
    _queued([workload], gpus=2)
    url = f"/t/acme/workloads/{workload.pk}/"
    client.get(url)
    count, html = _queries(client, url)
    # In progress, it also asks for a look (one UPDATE); Kueue's side is read with the row.
    assert count == DETAIL_QUERIES + 1
    assert 'id="queue-summary">1st in the queue<' in html


def test_a_workload_still_starting_is_looked_at_and_shown_as_found(
    login, tenant, tenant_member, busy
):
    client = login(tenant_member)
    (workload,) = _launch(tenant, tenant_member, 1, "chat")
    html = client.get(f"/t/acme/workloads/{workload.pk}/").content.decode()
    assert 'hx-trigger="every 3s"' in html  # still in progress: the page polls
    workload.refresh_from_db()
    assert workload.observation_recorded_at is not None  # and a look was asked for


def test_the_switcher_lists_a_members_tenants_and_others_are_not_found(
    login, tenant, other_tenant, tenant_member
):
    MembershipFactory(tenant=other_tenant, user=tenant_member)
    client = login(tenant_member)
    html = client.get("/t/acme/").content.decode()
    switcher = html[html.index('id="tenant-switcher"') :]
    assert 'class="dropdown-item active" href="/t/acme/">Acme Labs<' in switcher
    assert 'href="/t/globex/">Globex Corp<' in switcher
    assert client.get("/t/initech/").status_code == 404


def test_the_switcher_on_a_workloads_page_comes_with_the_users_roles(
    login, tenant, other_tenant, tenant_member, platform_admin, busy
):
    """The workload page's switcher is read with the user's roles (no query of its own): a
    member's active tenants by name; a platform admin's memberships, suspended ones too, as
    they may open every tenant."""
    (workload,) = _launch(tenant, tenant_member, 1, "chat")
    url = f"/t/acme/workloads/{workload.pk}/"
    third = TenantFactory(slug="aardvark", name="Aardvark Inc")
    MembershipFactory(tenant=other_tenant, user=tenant_member)
    MembershipFactory(tenant=third, user=tenant_member)
    html = login(tenant_member).get(url).content.decode()
    switcher = html[html.index('id="tenant-switcher"') :]
    links = re.findall(r'href="/t/([a-z-]+)/">', switcher)
    assert links[:3] == ["aardvark", "acme", "globex"]  # by name
    assert 'class="dropdown-item active" href="/t/acme/">Acme Labs<' in switcher

    third.status = Tenant.Status.SUSPENDED
    third.save()
    switcher = login(tenant_member).get(url).content.decode()
    assert 'href="/t/aardvark/"' not in switcher[switcher.index('id="tenant-switcher"') :]

    for each in (tenant, third):
        MembershipFactory(tenant=each, user=platform_admin)
    html = login(platform_admin).get(url).content.decode()
    links = re.findall(r'href="/t/([a-z-]+)/">', html[html.index('id="tenant-switcher"') :])
    assert links[:2] == ["aardvark", "acme"]
