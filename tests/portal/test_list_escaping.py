"""Every list page shows a hostile name (`<script>` in a tenant's, a workload's or a person's
name) as text, never as markup. The invoice, node, tenant, dashboard and review-queue lists
have their own such tests beside their rows' (test_*_rows.py)."""

import pytest

from billing.models import UsageRecord
from tenants.models import QuotaRequest, QuotaRequestLine
from tenants.workloads.models import Workload
from tests.billing.usage_data import NOVEMBER, november_usage
from tests.factories import QuotaFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script>'
SHOWN = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"


def _shown_as_text(html: str) -> None:
    assert "<script>alert" not in html
    assert SHOWN in html


def test_the_workload_list(login, tenant, tenant_member):
    Workload.objects.create(tenant=tenant, kind="vm", name=HOSTILE, status="failed",
                            status_reason=HOSTILE, status_message=HOSTILE,
                            demand={HOSTILE: 1})
    _shown_as_text(login(tenant_member).get(f"/t/{tenant.slug}/workloads/").content.decode())


def test_the_quota_request_history(login, tenant, tenant_member):
    asker = UserFactory(username="asker", first_name=HOSTILE, last_name="")
    request = QuotaRequest.objects.create(tenant=tenant, requested_by=asker, justification="x",
                                          decision_note=HOSTILE, status="rejected",
                                          decided_by=asker)
    QuotaRequestLine.objects.create(request=request, resource="cpu", amount=1)
    html = login(tenant_member).get(f"/t/{tenant.slug}/quota/requests/").content.decode()
    _shown_as_text(html)
    assert f'<a href="/t/{tenant.slug}/quota/requests/{request.pk}/">' in html


def test_the_holdings(login, platform_admin):
    tenant = TenantFactory(slug="hostile", name=HOSTILE)
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-h100-80gb", limit=1)
    Workload.objects.create(tenant=tenant, kind="inference", name="a", status="ready",
                            demand={"gpu:nvidia-h100-80gb": 2})
    _shown_as_text(login(platform_admin).get("/fleet/holdings/").content.decode())


def test_the_usage_explorer(login, finance, tenant, other_tenant):
    tenant.name = HOSTILE
    tenant.cost_center = HOSTILE
    tenant.save()
    november_usage(tenant, other_tenant)
    assert UsageRecord.objects.filter(tenant=tenant).exists()
    _shown_as_text(login(finance).get("/billing/usage/", NOVEMBER).content.decode())
