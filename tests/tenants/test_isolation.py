"""A member of another tenant cannot see, ask for, approve or change anything of this one.

Pages and API alike answer 404 (missing and forbidden look the same), and nothing changes.
"""

import pytest

from core.models import AuditEvent
from tenants.models import Membership, Quota, QuotaRequest


@pytest.fixture
def victim(tenant, tenant_owner, tenant_member, granted, submit):
    """Acme with members, quota and one waiting request; returns that request."""
    return submit({"gpu:nvidia-h100-80gb": 8})


def _snapshot():
    return (
        list(QuotaRequest.objects.order_by("pk").values_list("pk", "status")),
        list(Quota.objects.order_by("pk").values_list("pk", "limit")),
        list(Membership.objects.order_by("pk").values_list("pk", "role")),
        AuditEvent.objects.count(),
    )


PAGES = [
    ("get", "/t/acme/", None),
    ("get", "/t/acme/quota/", None),
    ("get", "/t/acme/quota/requests/", None),
    ("get", "/t/acme/quota/requests/new/", None),
    ("get", "/t/acme/quota/requests/{pk}/", None),
    ("get", "/t/acme/members/", None),
    ("get", "/t/globex/quota/requests/{pk}/", None),  # own tenant's URL, other tenant's request
    (
        "post",
        "/t/acme/quota/requests/new/",
        {
            "lines-TOTAL_FORMS": "1",
            "lines-INITIAL_FORMS": "0",
            "lines-0-resource": "cpu",
            "lines-0-amount": "8",
            "justification": "mine now",
        },
    ),
    ("post", "/t/acme/quota/requests/preview/", {"lines-TOTAL_FORMS": "0"}),
    ("post", "/t/acme/quota/requests/{pk}/withdraw/", {}),
    ("post", "/t/globex/quota/requests/{pk}/withdraw/", {}),
    ("post", "/t/acme/members/", {"user": "outsider", "role": "owner"}),
    ("post", "/t/acme/members/{member}/", {"remove": "1"}),
]


@pytest.mark.parametrize(("method", "url", "data"), PAGES, ids=lambda v: str(v)[:40])
def test_pages_of_another_tenant_are_404_and_change_nothing(
    login, other_tenant_member, victim, method, url, data
):
    member = Membership.objects.get(user__username="member")
    url = url.format(pk=victim.pk, member=member.pk)
    before = _snapshot()
    response = getattr(login(other_tenant_member), method)(url, data or {})
    assert response.status_code == 404
    assert _snapshot() == before


API = [
    ("get", "/api/v1/tenants/acme/", None),
    ("get", "/api/v1/tenants/acme/quota/", None),
    ("get", "/api/v1/tenants/acme/members/", None),
    ("get", "/api/v1/quota-requests/{pk}/", None),
    (
        "post",
        "/api/v1/quota-requests/",
        {"tenant": "acme", "lines": [{"resource": "cpu", "amount": 8}], "justification": "x"},
    ),
    (
        "post",
        "/api/v1/quota-requests/preview/",
        {"tenant": "acme", "lines": [{"resource": "cpu", "amount": 8}]},
    ),
    ("post", "/api/v1/quota-requests/{pk}/approve/", {}),
    ("post", "/api/v1/quota-requests/{pk}/reject/", {"reason": "mine"}),
    ("post", "/api/v1/quota-requests/{pk}/withdraw/", {}),
    ("post", "/api/v1/tenants/acme/members/", {"user": "outsider", "role": "owner"}),
    ("patch", "/api/v1/tenants/acme/members/{member}/", {"role": "viewer"}),
    ("delete", "/api/v1/tenants/acme/members/{member}/", None),
]


@pytest.mark.parametrize(("method", "url", "data"), API, ids=lambda v: str(v)[:40])
def test_api_of_another_tenant_is_404_and_changes_nothing(
    api_client, other_tenant_member, victim, method, url, data
):
    member = Membership.objects.get(user__username="member")
    url = url.format(pk=victim.pk, member=member.pk)
    api_client.force_login(other_tenant_member)
    before = _snapshot()
    response = getattr(api_client, method)(url, data, format="json")
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"
    assert _snapshot() == before


def test_lists_never_show_another_tenants_requests(api_client, login, other_tenant_member, victim):
    api_client.force_login(other_tenant_member)
    assert api_client.get("/api/v1/quota-requests/").json()["count"] == 0
    assert api_client.get("/api/v1/quota-requests/?tenant=acme").json()["count"] == 0
    assert [t["slug"] for t in api_client.get("/api/v1/tenants/").json()["results"]] == ["globex"]
    html = login(other_tenant_member).get("/t/globex/quota/requests/").content.decode()
    assert f"#{victim.pk}" not in html


def test_tenant_members_cannot_reach_the_admin_review(login, tenant_owner, victim):
    response = login(tenant_owner).get(f"/admin/tenants/quotarequest/{victim.pk}/change/")
    assert response.status_code == 302  # to the admin login: not a platform admin
    assert QuotaRequest.objects.get(pk=victim.pk).status == QuotaRequest.Status.SUBMITTED


def test_an_owner_cannot_reach_another_tenants_members_through_their_own_tenant(
    api_client, login, tenant_owner, other_tenant_member, victim
):
    """Ids of the other tenant's memberships, under acme's URLs: 404 and nothing changes."""
    theirs = Membership.objects.get(user=other_tenant_member)
    before = _snapshot()
    client = login(tenant_owner)
    for data in ({"role": "viewer"}, {"remove": "1"}):
        assert client.post(f"/t/acme/members/{theirs.pk}/", data).status_code == 404
    api_client.force_login(tenant_owner)
    url = f"/api/v1/tenants/acme/members/{theirs.pk}/"
    assert api_client.patch(url, {"role": "viewer"}, format="json").status_code == 404
    assert api_client.delete(url).status_code == 404
    assert _snapshot() == before
    assert Membership.objects.get(pk=theirs.pk).role == Membership.Role.MEMBER
