"""The tenants API: tenants, quota, members and quota requests, with the pages' rules."""

import datetime

import pytest
from django.utils import timezone

from tenants.models import Membership, Quota, QuotaRequest, Tenant
from tests.factories import MembershipFactory, TenantFactory, UserFactory

S = QuotaRequest.Status
NEXT_MONTH = (timezone.localdate() + datetime.timedelta(days=30)).isoformat()


@pytest.fixture
def as_user(api_client):
    def _as(user):
        api_client.force_login(user)
        return api_client

    return _as


def _ask(client, lines, tenant="acme", **extra):
    body = {
        "tenant": tenant,
        "lines": [{"resource": r, "amount": a} for r, a in lines],
        "justification": "Serving the new 405B model.",
        **extra,
    }
    return client.post("/api/v1/quota-requests/", body, format="json")


def test_tenant_list_detail_and_quota(as_user, tenant_member, tenant, other_tenant, granted):
    client = as_user(tenant_member)
    listing = client.get("/api/v1/tenants/").json()
    assert [t["slug"] for t in listing["results"]] == ["acme"]
    detail = client.get("/api/v1/tenants/acme/").json()
    assert detail["namespace"] == "tenant-acme"
    assert detail["cluster"] == {
        "state": "applying",
        "applied_at": None,
        "error": "",
        "failed_at": None,
        "desired_version": 1,
        "applied_version": 0,
    }
    quota = client.get("/api/v1/tenants/acme/quota/").json()["results"]
    assert {(q["resource"], q["limit"], q["used"]) for q in quota} == {
        ("gpu:nvidia-h100-80gb", 8, 0),
        ("cpu", 64, 0),
    }


def test_member_asks_for_quota_and_sees_it(as_user, tenant_member, tenant):
    client = as_user(tenant_member)
    response = _ask(client, [("gpu:nvidia-h200", 8), ("cpu", 96)], ends_on=NEXT_MONTH)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "submitted" and body["tenant"] == "acme"
    assert body["requested_by"] == "member" and body["ends_on"] == NEXT_MONTH
    assert [(line["resource"], line["amount"]) for line in body["lines"]] == [
        ("gpu:nvidia-h200", 8),
        ("cpu", 96),
    ]
    assert client.get(f"/api/v1/quota-requests/{body['id']}/").json()["id"] == body["id"]
    assert client.get("/api/v1/quota-requests/?status=submitted").json()["count"] == 1
    assert client.get("/api/v1/quota-requests/?status=applied").json()["count"] == 0


@pytest.mark.parametrize(
    ("lines", "extra", "field_path"),
    [
        ([("gpu:nvidia-h200", 0)], {}, ("lines", 0, "amount")),
        ([("gpu:nvidia-h200", -2)], {}, ("lines", 0, "amount")),
        ([("gpu:nvidia-h200", 123456789)], {}, ("lines", 0, "amount")),
        ([("gpu:nvidia-h200", "lots")], {}, ("lines", 0, "amount")),
        ([("gpu:nvidia-b200", 2)], {}, ("lines", 0, "resource")),
        ([("mig:nvidia-h200:9g.99gb", 2)], {}, ("lines", 0, "resource")),
        ([("cpu", 2)], {"ends_on": "2001-01-01"}, ("ends_on",)),
        ([("cpu", 2)], {"ends_on": "next tuesday"}, ("ends_on",)),
        ([("cpu", 2)], {"justification": ""}, ("justification",)),
        ([], {}, ("lines",)),
        ([("cpu", 2), ("cpu", 3)], {}, ("lines",)),
    ],
    ids=[
        "zero",
        "negative",
        "absurd",
        "not-a-number",
        "unknown-model",
        "unknown-profile",
        "past-date",
        "bad-date",
        "no-justification",
        "no-lines",
        "duplicate",
    ],
)
def test_bad_input_is_400_with_field_errors(
    as_user, tenant_member, tenant, lines, extra, field_path
):
    response = _ask(as_user(tenant_member), lines, **extra)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    node = error["fields"]
    for step in field_path:
        node = node[str(step)] if isinstance(node, dict) else node[step]
    assert node
    assert not QuotaRequest.objects.exists()


def test_viewer_may_look_but_not_ask(as_user, tenant_viewer, tenant):
    client = as_user(tenant_viewer)
    assert client.get("/api/v1/tenants/acme/").status_code == 200
    assert _ask(client, [("cpu", 2)]).status_code == 403
    assert not QuotaRequest.objects.exists()


def test_preview_says_what_the_quota_would_become(as_user, tenant_member, tenant, granted):
    response = as_user(tenant_member).post(
        "/api/v1/quota-requests/preview/",
        {"tenant": "acme", "lines": [{"resource": "gpu:nvidia-h100-80gb", "amount": 8}]},
        format="json",
    )
    assert response.status_code == 200
    (line,) = response.json()
    assert (line["current"], line["amount"], line["resulting"]) == (8, 8, 16)
    assert line["healthy"] == 0 and line["fits"] is False  # no H100s in this test's fleet


def test_admin_approves_with_changed_amounts_and_rejects_with_a_reason(
    as_user, platform_admin, tenant_member, tenant, submit, simulated_gateway
):
    first, second = submit({"gpu:nvidia-h100-80gb": 8, "cpu": 32}), submit({"cpu": 4})
    client = as_user(platform_admin)
    response = client.post(
        f"/api/v1/quota-requests/{first.pk}/approve/",
        {"amounts": {"gpu:nvidia-h100-80gb": 4}, "note": "Four for now."},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "approved" and body["decided_by"] == "platform-admin"
    granted = {line["resource"]: line["approved_amount"] for line in body["lines"]}
    assert granted == {"gpu:nvidia-h100-80gb": 4, "cpu": 32}
    assert (
        client.post(f"/api/v1/quota-requests/{first.pk}/approve/", {}, format="json").status_code
        == 409
    )

    assert (
        client.post(f"/api/v1/quota-requests/{second.pk}/reject/", {}, format="json").status_code
        == 400
    )
    response = client.post(
        f"/api/v1/quota-requests/{second.pk}/reject/", {"reason": "Use spot."}, format="json"
    )
    assert (
        response.json()["status"] == "rejected" and response.json()["decision_note"] == "Use spot."
    )


def test_members_cannot_approve_their_own_request(as_user, tenant_owner, submit):
    request = submit()
    response = as_user(tenant_owner).post(
        f"/api/v1/quota-requests/{request.pk}/approve/", {}, format="json"
    )
    assert response.status_code == 403
    assert QuotaRequest.objects.get(pk=request.pk).status == S.SUBMITTED
    assert not Quota.objects.exists()


def test_requester_withdraws(as_user, tenant_member, submit):
    request = submit()
    client = as_user(tenant_member)
    assert (
        client.post(f"/api/v1/quota-requests/{request.pk}/withdraw/").json()["status"]
        == "withdrawn"
    )
    assert client.post(f"/api/v1/quota-requests/{request.pk}/withdraw/").status_code == 409


def test_owner_manages_members_over_the_api(as_user, tenant_owner, tenant_member, tenant):
    UserFactory(username="newbie")
    client = as_user(tenant_owner)
    added = client.post("/api/v1/tenants/acme/members/", {"user": "newbie", "role": "viewer"})
    assert added.status_code == 201 and added.json()["role"] == "viewer"
    assert (
        client.post(
            "/api/v1/tenants/acme/members/", {"user": "ghost", "role": "viewer"}
        ).status_code
        == 400
    )
    member = Membership.objects.get(user=tenant_member)
    url = f"/api/v1/tenants/acme/members/{member.pk}/"
    assert client.patch(url, {"role": "viewer"}).json()["role"] == "viewer"
    assert client.patch(url, {"role": "emperor"}).status_code == 400
    assert client.delete(url).status_code == 204
    members = client.get("/api/v1/tenants/acme/members/").json()["results"]
    usernames = [m["username"] for m in members]
    assert sorted(usernames) == ["newbie", "owner"]


def test_only_platform_admins_create_tenants_and_slugs_must_be_dns_labels(
    as_user, platform_admin, tenant_owner
):
    body = {"slug": "new-team", "name": "New Team", "isolation": "dedicated"}
    assert as_user(tenant_owner).post("/api/v1/tenants/", body).status_code == 403
    client = as_user(platform_admin)
    for slug in ["New_Team", "-edge", "edge-", "a" * 64, "dots.not.allowed", ""]:
        response = client.post("/api/v1/tenants/", body | {"slug": slug})
        assert response.status_code == 400, slug
        assert "slug" in response.json()["error"]["fields"]
    assert not Tenant.objects.filter(name="New Team").exists()
    created = client.post("/api/v1/tenants/", body)
    assert created.status_code == 201 and created.json()["namespace"] == "tenant-new-team"


def test_request_list_query_count_does_not_grow(
    as_user, platform_admin, tenant, submit, django_assert_max_num_queries
):
    client = as_user(platform_admin)
    submit({"cpu": 1})
    client.get("/api/v1/quota-requests/")
    with django_assert_max_num_queries(12) as few:
        client.get("/api/v1/quota-requests/")
    for _ in range(3):
        other = TenantFactory()
        member = MembershipFactory(tenant=other, role="member").user
        for k in range(4):
            submit({"cpu": k + 1, "memory-gib": 2}, by=member, target=other)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get("/api/v1/quota-requests/").json()["count"] == 13


def test_tenant_list_query_count_does_not_grow(
    as_user, platform_admin, tenant, django_assert_max_num_queries
):
    client = as_user(platform_admin)
    client.get("/api/v1/tenants/")
    with django_assert_max_num_queries(10) as few:
        client.get("/api/v1/tenants/")
    for _ in range(8):
        TenantFactory()
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get("/api/v1/tenants/").json()["count"] == 9


@pytest.mark.parametrize("url", ["/api/v1/quota-requests/", "/api/v1/quota-requests/preview/"])
def test_a_body_that_is_not_an_object_is_400_not_500(as_user, tenant_member, tenant, url):
    response = as_user(tenant_member).post(url, ["acme"], format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert not QuotaRequest.objects.exists()


@pytest.mark.parametrize("action", ["", "approve/", "reject/", "withdraw/"])
def test_a_request_id_that_is_not_a_number_is_404(as_user, platform_admin, submit, action):
    request = submit()
    client = as_user(platform_admin)
    for pk in ("abc", "1e3", "99999999999999999999"):
        response = (client.get if not action else client.post)(
            f"/api/v1/quota-requests/{pk}/{action}", {"reason": "x"}, format="json"
        )
        assert response.status_code == 404, (pk, response.content)
    assert QuotaRequest.objects.get(pk=request.pk).status == S.SUBMITTED
