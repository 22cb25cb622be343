"""The dashboard's cards as the tenant sees them: quota bars, the latest workloads and
requests, the members; every name shown escaped."""

import datetime

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from tenants.models import Membership, QuotaRequest, QuotaRequestLine, Source
from tenants.workloads.models import Workload
from tests.factories import QuotaFactory

User = get_user_model()
pytestmark = pytest.mark.django_db


def test_the_cards_show_every_kind_of_item_escaped(login, tenant, tenant_owner):
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-h100-80gb", limit=16)
    QuotaFactory(tenant=tenant, resource="cpu", limit=2_500_000)
    hostile = User.objects.create_user(username="x&y", first_name="<script>ada</script>",
                                       last_name="L", email='"a"@x.io')
    Membership.objects.create(tenant=tenant, user=hostile, role="viewer", source=Source.KEYCLOAK)
    workload = Workload.objects.create(tenant=tenant, kind="inference",
                                       name="<script>web</script>", status="provisioning")
    request = QuotaRequest.objects.create(tenant=tenant, requested_by=hostile,
                                          status="withdrawn", justification="x",
                                          ends_on=datetime.date(2027, 1, 31))
    QuotaRequestLine.objects.create(request=request, resource="cpu", amount=1_000)

    html = login(tenant_owner).get(f"/t/{tenant.slug}/").content.decode()

    assert "<script>" not in html
    assert "&lt;script&gt;web&lt;/script&gt;</a>" in html
    assert f'<a href="/t/{tenant.slug}/workloads/{workload.pk}/">' in html
    assert 'data-status="provisioning"><span class="spinner-grow' in html
    assert f'<a href="/t/{tenant.slug}/quota/requests/{request.pk}/"' in html
    assert 'border" data-status="withdrawn">' in html
    assert "+1,000 vCPU" in html and "· until 2027-01-31" in html
    assert "&lt;script&gt;ada&lt;/script&gt; L" in html and "&quot;a&quot;@x.io" in html
    assert html.count('title="Managed in Keycloak"') == 1
    assert 'aria-label="NVIDIA H100 80GB HBM3 GPUs used"' in html
    assert "0 / 2,500,000" in html


def test_the_cards_read_the_members_and_latest_workloads_the_orm_reads(tenant, other_tenant):
    from tenants.access.selectors import tenant_members, tenant_members_summary
    from tenants.workloads.selectors import tenant_workloads_recent

    for n, (username, role) in enumerate([("zed", "owner"), ("amy", "viewer"), ("bo", "owner")]):
        user = User.objects.create_user(username=username, first_name=f"F{n}",
                                        last_name="<L>", email=f"{username}@x.io")
        Membership.objects.create(tenant=tenant, user=user, role=role)
    Membership.objects.create(tenant=other_tenant, user=User.objects.create_user("else"),
                              role="owner")
    now = timezone.now()
    for n, status in enumerate(["ready", "deleted", "failed", "pending", "ready", "deleting",
                                "ready", "ready"]):
        workload = Workload.objects.create(tenant=tenant, kind=("vm", "inference")[n % 2],
                                           name=f"w{n}", status=status)
        # Two share a creation time: the id breaks the tie, newest first.
        Workload.objects.filter(pk=workload.pk).update(
            created_at=now - datetime.timedelta(minutes=min(n, 8 - n)))
    Workload.objects.create(tenant=other_tenant, kind="vm", name="theirs", status="ready")

    members = tenant_members_summary(tenant=tenant)
    expected = list(tenant_members(tenant=tenant))
    assert [(m.pk, m.role, m.source, m.user.pk, m.user.username, m.user.get_full_name(),
             m.user.email) for m in members] == [
        (m.pk, m.role, m.source, m.user.pk, m.user.username, m.user.get_full_name(),
         m.user.email) for m in expected]

    recent = tenant_workloads_recent(tenant=tenant, limit=6)
    orm = list(Workload.objects.filter(tenant=tenant).exclude(status="deleted")
               .order_by("-created_at", "-id")[:6])
    assert [(w.pk, w.tenant_id, w.kind, w.name, w.status) for w in recent] == [
        (w.pk, w.tenant_id, w.kind, w.name, w.status) for w in orm]
    assert "w1" not in {w.name for w in recent} and len(recent) == 6
