"""The navigation leads each role to every page it may open, and tells admins what waits."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing.models import BillingAccount
from tenants.quota import services as quota_requests
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def _nav(html: str) -> dict[str, str]:
    """Label → link of the main navigation."""
    items = re.findall(
        r'<a class="nav-link[^"]*"[^>]*href="([^"]+)"><i[^>]*></i> <span class="nav-label">([^<]+)',
        html,
    )
    return {label: url for url, label in items}


@pytest.mark.parametrize("role", ["finance", "platform_admin"])
def test_finance_and_admins_reach_every_tenants_pages_from_the_navigation(
    request, login, tenant, other_tenant, role
):
    helix = TenantFactory(slug="helix", name="Helix Research")
    BillingAccount.objects.create(tenant=helix, monthly_budget="250000.00")
    client = login(request.getfixturevalue(role))

    nav = _nav(client.get("/", follow=True).content.decode())  # the role's landing page
    assert nav["Tenants"] == "/tenants/"

    listing = client.get("/tenants/")
    html = listing.content.decode()
    assert listing.status_code == 200
    for slug in ("acme", "globex", "helix"):
        assert f'href="/t/{slug}/"' in html
    assert "EUR 250,000.00" in html  # money: separators and the currency
    dashboard = client.get("/t/acme/").content.decode()
    active = re.search(r'<a class="nav-link active"[^>]*>.*?nav-label">([^<]+)', dashboard)
    assert active and active.group(1) == "Tenants"


def test_tenant_people_get_no_tenants_item_and_no_role_gets_403(
    login, tenant_member, no_role_user
):
    assert "Tenants" not in _nav(login(tenant_member).get("/t/acme/").content.decode())
    assert login(no_role_user).get("/tenants/").status_code == 403


def test_admins_see_how_many_requests_wait_in_one_query_whatever_their_number(
    login, platform_admin, tenant, tenant_member
):
    client = login(platform_admin)
    page = client.get("/tenants/").content.decode()
    assert 'id="nav-badge-requests"' not in page  # nothing waits: no badge

    def submit(n: int) -> None:
        for _ in range(n):
            quota_requests.quota_request_create(
                tenant=tenant, requested_by=tenant_member, justification="More.",
                lines=[{"resource": "gpu:nvidia-h100-80gb", "amount": 1}],
            )

    submit(2)
    with CaptureQueriesContext(connection) as few:
        page = client.get("/tenants/").content.decode()
    badge = re.search(r'id="nav-badge-requests">(\d+)<', page)
    assert badge and badge.group(1) == "2"
    assert "waiting for a decision" in page

    submit(9)
    with CaptureQueriesContext(connection) as more:
        page = client.get("/tenants/").content.decode()
    assert re.search(r'id="nav-badge-requests">(\d+)<', page).group(1) == "11"
    assert len(more.captured_queries) == len(few.captured_queries)
    counts = [q["sql"] for q in more.captured_queries if "tenants_quotarequest" in q["sql"]]
    assert len(counts) == 1 and "COUNT(" in counts[0]


def test_finance_sees_no_request_badge(login, finance, tenant, tenant_member):
    quota_requests.quota_request_create(
        tenant=tenant, requested_by=tenant_member, justification="More.",
        lines=[{"resource": "gpu:nvidia-h100-80gb", "amount": 1}],
    )
    assert 'id="nav-badge-requests"' not in login(finance).get("/tenants/").content.decode()
