"""The portal's tenant list rows (/tenants/) are written in Python as the template wrote them."""

import pytest
from django.template import Context, Template

from billing.models import BillingAccount
from portal.templatetags.portal_format import money
from tenants.access.selectors import tenants_for_list
from tenants.access.views import _tenant_rows
from tenants.models import Tenant
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

# The row of templates/tenants/tenant_list.html before it was written in Python, with the
# cells the view worked out for it.
TEMPLATE_ROW = Template(
    """<tr data-tenant="{{ tenant.slug }}">
<td><a href="{{ tenant.dashboard_url }}">{{ tenant.name }}</a><div class="small text-muted"><code>{{ tenant.slug }}</code></div></td>
<td><span class="badge text-bg-{% if tenant.isolation == 'dedicated' %}primary{% else %}info{% endif %}" title="{{ tenant.isolation_label }}">{{ tenant.isolation_title }}</span></td>
<td>{% if tenant.active %}{{ tenant.status_label }}{% else %}<span class="badge text-bg-danger">{{ tenant.status_label }}</span>{% endif %}</td>
<td class="small">{{ tenant.cost_center }}</td>
<td class="text-end text-nowrap budget">{% if tenant.budget %}{{ tenant.budget }}{% else %}<span class="text-muted">none set</span>{% endif %}</td>
<td class="text-nowrap small"><a href="{{ tenant.quota_url }}">Quota</a> · <a href="{{ tenant.requests_url }}">Requests</a></td>
</tr>"""  # noqa: E501
)


def _cells(t: dict) -> dict:
    budget = t["billing_account__monthly_budget"]
    return {
        "slug": t["slug"],
        "name": t["name"],
        "isolation": t["isolation"],
        "isolation_title": t["isolation"].title(),
        "isolation_label": dict(Tenant.Isolation.choices).get(t["isolation"], t["isolation"]),
        "active": t["status"] == Tenant.Status.ACTIVE,
        "status_label": dict(Tenant.Status.choices).get(t["status"], t["status"]),
        "cost_center": t["cost_center"] or "—",
        "budget": money(budget) if budget else "",
        "dashboard_url": f"/t/{t['slug']}/",
        "quota_url": f"/t/{t['slug']}/quota/",
        "requests_url": f"/t/{t['slug']}/quota/requests/",
    }


def test_every_kind_of_row_is_what_the_template_wrote(platform_admin):
    odd = TenantFactory(slug="odd", name='Nova <b>&</b> "Co"', isolation="dedicated",
                        cost_center="<R&D>", status=Tenant.Status.SUSPENDED)
    BillingAccount.objects.create(tenant=odd, monthly_budget="250000.00")
    TenantFactory(slug="plain", name="Plain", cost_center="")
    rows = list(tenants_for_list(user=platform_admin))

    written = _tenant_rows(rows)

    assert [r["slug"] for r in rows] == ["odd", "plain"]
    for row, html in zip(rows, written, strict=True):
        assert html == TEMPLATE_ROW.render(Context({"tenant": _cells(row)})), row["slug"]
    assert "Nova &lt;b&gt;&amp;&lt;/b&gt; &quot;Co&quot;" in written[0]
