"""The portal's tenant list (/tenants/) at fleet scale: 50 tenants a page, by name, each row
as before, and a search that finds any tenant whatever page it would be on."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing.models import BillingAccount
from tenants.models import Tenant
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

LIST = "/tenants/"


def _tenants(n: int, prefix: str = "t") -> list[Tenant]:
    return Tenant.objects.bulk_create(
        Tenant(
            slug=f"{prefix}-{i:04d}",
            name=f"Team {prefix.upper()} {i:04d}",
            cost_center=f"CC-{i:04d}",
        )
        for i in range(n)
    )


def _slugs(html: str) -> list[str]:
    return re.findall(r'<tr data-tenant="([^"]+)">', html)


def test_a_row_shows_what_it_showed(login, platform_admin):
    helix = TenantFactory(
        slug="helix",
        name="Helix Research",
        isolation="dedicated",
        cost_center="R&D-7",
        status=Tenant.Status.SUSPENDED,
    )
    BillingAccount.objects.create(tenant=helix, monthly_budget="250000.00")
    TenantFactory(slug="acme", name="Acme Labs", cost_center="")
    html = login(platform_admin).get(LIST).content.decode()
    assert _slugs(html) == ["acme", "helix"]
    row = re.search(r'<tr data-tenant="helix">.*?</tr>', html, re.S).group(0)
    assert '<a href="/t/helix/">Helix Research</a>' in row and "<code>helix</code>" in row
    assert 'title="Dedicated (whole GPUs on reserved nodes)">Dedicated<' in row
    assert '<span class="badge text-bg-danger">Suspended</span>' in row
    assert "R&amp;D-7" in row and "EUR 250,000.00" in row
    assert '<a href="/t/helix/quota/">Quota</a>' in row
    assert '<a href="/t/helix/quota/requests/">Requests</a>' in row
    acme = re.search(r'<tr data-tenant="acme">.*?</tr>', html, re.S).group(0)
    assert "<td>Active</td>" in acme and "—" in acme and "none set" in acme


def test_fifty_a_page_by_name(login, platform_admin):
    tenants = _tenants(120)
    client = login(platform_admin)
    html = client.get(LIST).content.decode()
    assert _slugs(html) == [t.slug for t in tenants[:50]]
    assert re.search(r'id="tenant-count">120<', html) and "1\u201350, by name" in html
    html = client.get(LIST, {"page": 3}).content.decode()
    assert _slugs(html) == [t.slug for t in tenants[100:]]
    assert 'href="?page=2"' in html


@pytest.mark.parametrize("search", ["Team T 0117", "t-0117", "cc-0117", "  0117 "])
def test_search_finds_any_tenant_by_name_slug_or_cost_center(login, platform_admin, search):
    _tenants(120)
    html = login(platform_admin).get(LIST, {"q": search}).content.decode()
    assert _slugs(html) == ["t-0117"]
    assert 'value="0117"' in html or f'value="{search.strip()}"' in html


def test_filters_by_status_and_pages_keep_the_filters(login, platform_admin):
    tenants = _tenants(60)
    Tenant.objects.filter(pk__in=[t.pk for t in tenants[:55]]).update(status="suspended")
    client = login(platform_admin)
    html = client.get(LIST, {"status": "active"}).content.decode()
    assert _slugs(html) == [t.slug for t in tenants[55:]]
    html = client.get(LIST, {"status": "suspended", "q": "Team"}).content.decode()
    assert len(_slugs(html)) == 50
    assert 'href="?page=2&amp;q=Team&amp;status=suspended"' in html
    html = client.get(LIST, {"status": "bogus"}).content.decode()
    assert len(_slugs(html)) == 50  # an unknown status filters nothing
    html = client.get(LIST, {"q": "nobody-has-this"}).content.decode()
    assert "No tenant matches “nobody-has-this”" in html and 'href="/tenants/"' in html


def test_a_member_sees_only_their_tenants(login, tenant_member, other_tenant):
    html = login(tenant_member).get(LIST).content.decode()
    assert _slugs(html) == ["acme"]


def test_the_list_makes_the_same_queries_at_any_size(login, platform_admin):
    client = login(platform_admin)
    _tenants(3, "a")
    client.get(LIST)  # warm-up
    with CaptureQueriesContext(connection) as few:
        client.get(LIST, {"q": "team"})
    for tenant in _tenants(80, "b"):
        BillingAccount.objects.create(tenant=tenant, monthly_budget="1000.00")
    with CaptureQueriesContext(connection) as more:
        html = client.get(LIST, {"q": "team"}).content.decode()
    assert len(_slugs(html)) == 50
    assert len(more.captured_queries) == len(few.captured_queries)
