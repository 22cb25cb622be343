"""The portal's tenant list rows (/tenants/) as people see them, hostile names escaped."""

import pytest

from billing.models import BillingAccount
from tenants.models import Tenant
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def test_every_kind_of_row_shows_its_values_escaped(login, platform_admin):
    odd = TenantFactory(slug="odd", name='<script>alert(1)</script> & "Co"',
                        isolation="dedicated", cost_center="<R&D>",
                        status=Tenant.Status.SUSPENDED)
    BillingAccount.objects.create(tenant=odd, monthly_budget="250000.00")
    TenantFactory(slug="plain", name="Plain", cost_center="")

    html = login(platform_admin).get("/tenants/").content.decode()
    odd_row = html[html.index('<tr data-tenant="odd">'):]
    odd_row = odd_row[: odd_row.index("</tr>")]
    plain_row = html[html.index('<tr data-tenant="plain">'):]
    plain_row = plain_row[: plain_row.index("</tr>")]

    assert "<script>" not in html
    name = "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Co&quot;"
    assert f'<a href="/t/odd/">{name}</a>' in odd_row
    assert 'text-bg-primary" title="Dedicated' in odd_row and ">Dedicated</span>" in odd_row
    assert '<span class="badge text-bg-danger">Suspended</span>' in odd_row
    assert '<td class="small">&lt;R&amp;D&gt;</td>' in odd_row
    assert "EUR 250,000.00" in odd_row or "250,000.00" in odd_row
    assert '<a href="/t/odd/quota/">Quota</a> · ' in odd_row
    assert '<a href="/t/odd/quota/requests/">Requests</a>' in odd_row
    assert '<td class="small">—</td>' in plain_row
    assert '<span class="text-muted">none set</span>' in plain_row
    assert 'text-bg-info"' in plain_row and "<td>Active</td>" in plain_row
