"""Admin changelists whose rows are planned per column (portal.admin_rows) render exactly the
HTML Django's own row code renders, cell for cell, with the page's filters kept in each link."""

import datetime
import re

import pytest
from django.contrib.admin.templatetags.admin_list import results
from django.urls import reverse
from django.utils import timezone

from portal.admin_rows import changelist_rows
from tenants.models import QuotaRequest, Tenant
from tenants.quota import services as quota_requests
from tests.factories import MembershipFactory, TenantFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(login, platform_admin):
    return login(platform_admin)


def as_html(row) -> str:
    return "".join(str(cell) for cell in row)


def _both(client, url: str) -> tuple[list[str], list[str]]:
    """The page's rows as portal.admin_rows renders them and as Django's results() does."""
    response = client.get(url)
    assert response.status_code == 200
    cl = response.context["cl"]
    planned = [as_html(row) for row in changelist_rows(cl)]
    django = [as_html(row) for row in results(cl)]
    assert planned  # the page has rows to compare
    # What the page served is the planned rows.
    page = response.content.decode()
    assert all(row in page for row in planned)
    return planned, django


def _requests(tenant, member):
    odd = TenantFactory(slug="odd-lab", name='Odd <b>"Lab"</b> & Co')
    outsider = MembershipFactory(tenant=odd, role="owner").user
    created = [
        quota_requests.quota_request_create(
            tenant=tenant,
            requested_by=member,
            justification="Fine-tune.",
            lines=[
                {"resource": "gpu:nvidia-h100-80gb", "amount": 8},
                {"resource": "cpu", "amount": 1200},
            ],
        ),
        quota_requests.quota_request_create(
            tenant=odd,
            requested_by=outsider,
            justification="Serve.",
            lines=[{"resource": "memory-gib", "amount": 64}],
            ends_on=timezone.localdate() + datetime.timedelta(days=30),
        ),
    ]
    QuotaRequest.objects.filter(pk=created[1].pk).update(
        created_at=timezone.now() - datetime.timedelta(days=3)
    )
    return created


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?status__exact=submitted",
        "?status__exact=submitted&all=",
        "?status__exact=submitted&o=-2.1",
        "?tenant=odd-lab&status__exact=submitted",
        "?q=Lab",
    ],
)
def test_the_review_queue_rows_are_djangos_own(admin_client, tenant, tenant_member, query):
    _requests(tenant, tenant_member)

    planned, django = _both(admin_client, reverse("admin:tenants_quotarequest_changelist") + query)

    assert planned == django


def test_the_review_queue_rows_keep_the_filters_in_their_links(admin_client, tenant, tenant_member):
    first, _ = _requests(tenant, tenant_member)
    url = reverse("admin:tenants_quotarequest_changelist") + "?status__exact=submitted"

    planned, _ = _both(admin_client, url)

    assert re.search(
        rf'<th class="field-number"><a href="/admin/tenants/quotarequest/{first.pk}/change/'
        r'\?_changelist_filters=status__exact%3Dsubmitted">#\d+</a></th>',
        "".join(planned),
    )
    assert 'aria-label="Select this object for an action - Quota request' in planned[0]


@pytest.mark.parametrize("query", ["", "?status__exact=active", "?o=2", "?q=lab"])
def test_the_tenant_list_rows_are_djangos_own(admin_client, query):
    TenantFactory(slug="plain-lab", name="Plain Lab")
    TenantFactory(
        slug="dedicated-lab", name="Dedicated <Lab>", isolation="dedicated", cost_center="CC-1"
    )
    TenantFactory(slug="cohort-lab", name="Cohort Lab", cohort="research")
    Tenant.objects.filter(slug="plain-lab").update(
        reconcile_error="quota rejected: <forbidden> & more " * 5
    )

    planned, django = _both(admin_client, reverse("admin:tenants_tenant_changelist") + query)

    assert planned == django
