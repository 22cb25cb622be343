"""Django admin's tenant list at fleet scale: a short page and one count per request."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tenants.models import Tenant
from tests.factories import TenantFactory

CHANGELIST = reverse("admin:tenants_tenant_changelist")


@pytest.fixture
def admin_client(login, platform_admin):
    return login(platform_admin)


def _rows(html: str) -> int:
    return len(re.findall(r'<a href="/admin/tenants/tenant/\d+/change/', html))


@pytest.mark.parametrize("query", ["", "?status__exact=active", "?q=lab"])
def test_the_tenant_list_counts_its_rows_once_per_request(admin_client, query):
    TenantFactory.create_batch(3, name="Some lab")
    admin_client.get(CHANGELIST + query)
    with CaptureQueriesContext(connection) as captured:
        assert admin_client.get(CHANGELIST + query).status_code == 200
    counts = [q["sql"] for q in captured.captured_queries if "COUNT(" in q["sql"]]
    assert len(counts) == 1, counts


def test_the_tenant_list_shows_50_tenants_a_page(admin_client):
    TenantFactory.create_batch(60)
    first = admin_client.get(CHANGELIST).content.decode()
    second = admin_client.get(CHANGELIST + "?p=2").content.decode()
    assert _rows(first) == 50
    assert _rows(second) == Tenant.objects.count() - 50
