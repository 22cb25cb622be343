"""Quota per cluster or fleet-wide: the arithmetic, admission on two clusters, requests that
name where, and the migration that makes existing grants fleet-wide."""

import re

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse

from core.models import AuditEvent
from inventory.models import Cluster
from tenants.models import Quota, QuotaRequest, Workload
from tenants.quota import services as quota_requests
from tenants.quota.limits import cluster_limits, fleet_limits, grants_by_cluster, split_usage
from tenants.quota.selectors import grants_by_cluster as grants_from_selectors
from tenants.quota.selectors import tenant_quota_lines
from tenants.workloads.services.admission import admission_check
from tests.factories import QuotaFactory

pytestmark = pytest.mark.django_db

H100 = "gpu:nvidia-h100-80gb"


@pytest.fixture
def cluster_b(db):
    return Cluster.objects.create(slug="b", name="Hall B")


@pytest.fixture
def spread(tenant, cluster_b):
    """Acme: 4 H100s on main, 2 on b, 3 anywhere; 16 vCPUs anywhere."""
    return [
        QuotaFactory(tenant=tenant, cluster_id="main", resource=H100, limit=4),
        QuotaFactory(tenant=tenant, cluster_id="b", resource=H100, limit=2),
        QuotaFactory(tenant=tenant, resource=H100, limit=3),
        QuotaFactory(tenant=tenant, resource="cpu", limit=16),
    ]


def _hold(tenant, cluster, gpus, name):
    return Workload.objects.create(tenant=tenant, kind="vm", name=name, cluster_id=cluster,
                                   demand={H100: gpus})


def test_limits_per_cluster_add_the_fleet_wide_grant(tenant, spread):
    grants = grants_by_cluster(tenant)

    assert grants == {"main": {H100: 4}, "b": {H100: 2}, None: {H100: 3, "cpu": 16}}
    assert grants_from_selectors(tenant) == grants  # where placement reads it
    assert cluster_limits(tenant, "main") == {H100: 7, "cpu": 16}
    assert cluster_limits(tenant, "b") == {H100: 5, "cpu": 16}
    assert cluster_limits(tenant, "elsewhere") == {H100: 3, "cpu": 16}
    assert fleet_limits(grants) == {H100: 9, "cpu": 16}
    # Usage counts against the cluster's own grant first, the rest against anywhere.
    assert split_usage(grants, H100, {"main": 6, "b": 1}) == {"main": 4, None: 2, "b": 1}
    assert split_usage(grants, "cpu", {"main": 5, "b": 3}) == {None: 8}


def test_admission_on_two_clusters_counts_each_grant_and_anywhere_once(tenant, spread):
    _hold(tenant, "main", 6, "big")  # 4 of main's own, 2 of the 3 anywhere

    admission_check(tenant=tenant, demand={H100: 2}, cluster="b")  # b's own 2: fits
    admission_check(tenant=tenant, demand={H100: 3}, cluster="b")  # + the last anywhere
    with pytest.raises(ValidationError) as refused:
        admission_check(tenant=tenant, demand={H100: 4}, cluster="b")
    message = refused.value.message_dict["quota"][0]
    assert "on cluster b" in message and "3 are left there" in message
    with pytest.raises(ValidationError) as refused:
        admission_check(tenant=tenant, demand={H100: 2}, cluster="main")
    assert "on cluster main" in refused.value.message_dict["quota"][0]
    admission_check(tenant=tenant, demand={H100: 1}, cluster="main")

    _hold(tenant, "b", 3, "on-b")  # the fleet: 6 + 3 of 4 + 2 + 3 = 9
    for cluster in ("main", "b", "elsewhere"):
        with pytest.raises(ValidationError):
            admission_check(tenant=tenant, demand={H100: 1}, cluster=cluster)


def test_the_fleet_wide_grant_is_never_used_twice(tenant, cluster_b):
    """8 on main, 2 anywhere: 2 on b and 2 on a third cluster would use anywhere twice."""
    Cluster.objects.create(slug="c", name="Hall C")
    QuotaFactory(tenant=tenant, cluster_id="main", resource=H100, limit=8)
    QuotaFactory(tenant=tenant, resource=H100, limit=2)
    _hold(tenant, "b", 2, "on-b")

    with pytest.raises(ValidationError) as refused:
        admission_check(tenant=tenant, demand={H100: 1}, cluster="c")
    assert "0 are left there" in refused.value.message_dict["quota"][0]
    admission_check(tenant=tenant, demand={H100: 8}, cluster="main")


def test_a_fleet_wide_only_tenant_keeps_the_words_it_had(tenant, granted):
    _hold(tenant, "main", 6, "six")
    with pytest.raises(ValidationError) as refused:
        admission_check(tenant=tenant, demand={H100: 4, "gpu:nvidia-l40s": 1})
    assert refused.value.message_dict["quota"] == [
        "NVIDIA H100 80GB HBM3 GPUs: this needs 4, and 2 of your 8 are left (6 held by your "
        "other workloads).",
        "NVIDIA L40S GPUs: your tenant has no quota for it; ask for some on the quota page.",
    ]


def test_one_grant_per_class_on_each_cluster_and_one_anywhere(tenant, spread):
    for cluster in ("main", None):
        with pytest.raises(IntegrityError), transaction.atomic():
            Quota.objects.create(tenant=tenant, cluster_id=cluster, resource=H100, limit=1)


def test_the_quota_lines_show_each_grant_where_it_is(tenant, spread):
    _hold(tenant, "main", 6, "big")
    lines = {(line.resource, line.cluster): line for line in tenant_quota_lines(tenant=tenant)}

    assert {key: (line.limit, line.used, line.where) for key, line in lines.items()} == {
        (H100, "main"): (4, 4, "main"),
        (H100, "b"): (2, 0, "b"),
        (H100, None): (3, 2, "Anywhere"),
        ("cpu", None): (16, 0, "Anywhere"),
    }


def test_a_request_for_a_cluster_is_granted_there(
    tenant, spread, submit, tenant_member, platform_admin, django_capture_on_commit_callbacks
):
    request = quota_requests.quota_request_create(
        tenant=tenant, requested_by=tenant_member, lines=[{"resource": H100, "amount": 5}],
        justification="Hall B has the free H100s.", cluster="b",
    )
    with django_capture_on_commit_callbacks():
        quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)

    assert grants_by_cluster(tenant)["b"] == {H100: 7}
    assert grants_by_cluster(tenant)[None] == {H100: 3, "cpu": 16}
    event = AuditEvent.objects.get(action="quota_request.approve")
    assert event.changes["cluster"] == "b"
    line = request.lines.get()
    assert (line.limit_before, line.limit_after) == (2, 7)


def test_the_api_asks_for_quota_on_a_cluster_and_refuses_an_unknown_or_retired_one(
    api_client, tenant_member, tenant, cluster_b
):
    api_client.force_login(tenant_member)
    client = api_client
    body = {"tenant": "acme", "lines": [{"resource": H100, "amount": 2}],
            "justification": "Training on hall B."}
    url = "/api/v1/quota-requests/"

    created = client.post(url, {**body, "cluster": "b"}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["cluster"] == "b"
    assert QuotaRequest.objects.get().cluster_id == "b"
    anywhere = client.post(url, body, format="json")
    assert anywhere.status_code == 201 and anywhere.json()["cluster"] is None

    Cluster.objects.filter(slug="b").update(state="retired")
    for where in ("b", "nowhere"):
        refused = client.post(url, {**body, "cluster": where}, format="json")
        assert refused.status_code == 400, refused.content
        assert refused.json()["error"]["fields"]["cluster"]
    assert QuotaRequest.objects.count() == 2
    preview = client.post(url + "preview/", {**body, "cluster": "nowhere"}, format="json")
    assert preview.status_code == 400 and preview.json()["error"]["fields"]["cluster"]


def test_the_request_form_offers_the_clusters_in_service(login, tenant_member, tenant, cluster_b):
    page = login(tenant_member).get(reverse("tenants:quota-request-create", args=["acme"]))
    html = page.content.decode()
    assert re.search(r'<option value=""( selected)?>Any cluster</option>', html)
    assert '<option value="b">b</option>' in html and '<option value="main">main</option>' in html
    Cluster.objects.filter(slug="b").update(state="retired")
    page = login(tenant_member).get(reverse("tenants:quota-request-create", args=["acme"]))
    assert '<option value="b">' not in page.content.decode()


def test_the_quota_page_shows_where_each_grant_is_and_each_clusters_state(
    login, tenant_member, tenant, spread
):
    from tenants.models import TenantCluster

    TenantCluster.objects.create(tenant=tenant, cluster_id="main",
                                 applied_version=tenant.desired_version)
    TenantCluster.objects.create(tenant=tenant, cluster_id="b", reconcile_error="Hall B is down.")

    html = login(tenant_member).get(reverse("tenants:quota-detail", args=["acme"])).content.decode()

    assert re.search(r'data-cluster="b"[^>]*>\s*<td>NVIDIA H100', html)
    assert re.search(r'data-cluster=""[^>]*>\s*<td>vCPU', html)
    assert "Anywhere" in html
    assert re.search(r'data-cluster="main" data-state="applied"', html)
    assert re.search(r'data-cluster="b" data-state="failing"[\s\S]*?Not applied: Hall B is down',
                     html)
