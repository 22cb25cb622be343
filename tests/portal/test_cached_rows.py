"""The workload list API writes each row once per set of values (portal.cached_rows): its
rows are always DRF's own rows of the workloads as they are now, whichever value changed, and a
list asked again builds no row again."""

import datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from portal.cached_rows import BoundedMemo
from tenants.models import Tenant
from tenants.workloads import api as workloads_api
from tenants.workloads.models import Workload, WorkloadStatus
from tenants.workloads.selectors import workloads_visible_to
from tenants.workloads.serializers import WorkloadSerializer

pytestmark = pytest.mark.django_db


@pytest.fixture
def workloads(tenant, other_tenant, platform_admin):
    now = timezone.now()
    made = []
    for n, status in enumerate([WorkloadStatus.READY, WorkloadStatus.PENDING, "failed"]):
        made.append(Workload.objects.create(
            tenant=(tenant, other_tenant)[n % 2], kind=("inference", "vm", "vcluster")[n],
            name=f"w-{n}", status=status, spec={"replicas": n, "image": "x"},
            demand={"gpu:nvidia-h100-80gb": n + 1}, launched_by=platform_admin if n else None,
            observed={"connection": {"items": [["URL", f"http://x/{n}"]], "notes": ["n"]},
                      "details": {"replicas": n}, "conditions": [{"type": "Ready"}]},
            observation_recorded_at=now, ready_at=now if n == 0 else None,
            reconcile_error="boom" * n,
        ))
    return made


def _listed(client, path="/api/v1/workloads/", **extra) -> dict[int, dict]:
    response = client.get(path, **extra)
    assert response.status_code == 200, response.content[:300]
    return {row["id"]: row for row in response.json()["results"]}


def _drfs(user, *, secure=False) -> dict[int, dict]:
    """DRF's own rows of the workloads as they are now (tenant and user joined)."""
    request = Request(APIRequestFactory().get("/api/v1/workloads/", secure=secure))
    serializer = WorkloadSerializer(context={"request": request})
    return {
        workload.pk: serializers.Serializer.to_representation(serializer, workload)
        for workload in workloads_visible_to(user)
    }


CHANGES = {
    "status": lambda w: Workload.objects.filter(pk=w.pk).update(status="deleting"),
    "spec": lambda w: Workload.objects.filter(pk=w.pk).update(spec={"replicas": 9}),
    "demand": lambda w: Workload.objects.filter(pk=w.pk).update(demand={"cpu": 4}),
    "observed": lambda w: Workload.objects.filter(pk=w.pk).update(
        observed={"details": {"ip": "10.0.0.9"}}),
    "reconcile": lambda w: Workload.objects.filter(pk=w.pk).update(
        applied_version=7, desired_version=7, reconcile_error=""),
    "ready_at": lambda w: Workload.objects.filter(pk=w.pk).update(
        ready_at=timezone.now() - datetime.timedelta(days=1)),
    "tenant slug": lambda w: Tenant.objects.filter(pk=w.tenant_id).update(slug="renamed"),
    "launcher": lambda w: get_user_model().objects.filter(pk=w.launched_by_id).update(
        username="someone-else"),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_listed_row_follows_each_value_it_shows(api_client, workloads, platform_admin, change):
    api_client.force_authenticate(platform_admin)
    before = _listed(api_client)
    assert before == _drfs(platform_admin)

    CHANGES[change](workloads[1])
    after = _listed(api_client)

    assert after == _drfs(platform_admin)
    assert after[workloads[1].pk] != before[workloads[1].pk]


def test_a_list_asked_again_builds_no_row_again(api_client, workloads, platform_admin):
    api_client.force_authenticate(platform_admin)
    first = _listed(api_client)
    memo = workloads_api._LISTED_ROWS.memo
    built = len(memo)

    with CaptureQueriesContext(connection) as queries:
        again = _listed(api_client)

    assert again == first == _drfs(platform_admin)
    assert len(memo) == built
    assert sum("tenants_workload" in q["sql"] for q in queries.captured_queries) <= 2


def test_each_request_gets_its_own_links_and_a_member_their_rows(
    api_client, workloads, platform_admin, tenant_member
):
    api_client.force_authenticate(platform_admin)
    plain = _listed(api_client)
    secure = _listed(api_client, secure=True)

    assert secure == _drfs(platform_admin, secure=True)
    assert all(row["url"].startswith("http://testserver/") for row in plain.values())
    assert all(row["url"].startswith("https://testserver/") for row in secure.values())

    api_client.force_authenticate(tenant_member)
    assert set(_listed(api_client)) == {w.pk for w in workloads if w.tenant.slug == "acme"}


def test_rows_are_written_in_the_current_timezone(api_client, workloads, platform_admin, settings):
    api_client.force_authenticate(platform_admin)
    utc = _listed(api_client)
    settings.TIME_ZONE = "America/New_York"
    new_york = _listed(api_client)

    assert new_york == _drfs(platform_admin)
    assert all(row["created_at"].endswith("Z") for row in utc.values())
    assert all(row["created_at"].endswith(("-05:00", "-04:00")) for row in new_york.values())


def test_a_bounded_memo_starts_again_when_full():
    memo = BoundedMemo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.put("c", 3) == 3
    assert dict(memo) == {"c": 3}
