"""A dedicated tenant's owners choose whether its cohort may borrow its idle reserved GPUs: on
its quota page, over the API, or a platform admin in Django admin. Every decision is audited
and re-enforced on the cluster, for the lender and for the shared tenants that borrow."""

import re

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from core.models import AuditEvent
from tenants.access.services import tenant_gpu_lending_set
from tenants.enforcement.manifests import KUEUE
from tenants.enforcement.services import tenant_reconcile, tenant_spec
from tenants.models import Quota, Tenant
from tests.factories import QuotaFactory

pytestmark = pytest.mark.django_db
L40S = "gpu:nvidia-l40s"
LENT_FLAVOR = "gpu-nvidia-l40s-reserved-acme"


@pytest.fixture
def lender(tenant):
    """acme, dedicated, named in cohort `pool` (it lends nothing until its owners opt in)."""
    Tenant.objects.filter(pk=tenant.pk).update(isolation=Tenant.Isolation.DEDICATED,
                                               cohort="pool")
    QuotaFactory(tenant=tenant, resource=L40S, limit=8)
    tenant.refresh_from_db()
    return tenant


@pytest.fixture
def borrower(other_tenant):
    """globex, shared, in cohort `pool`, holding L40S quota of its own."""
    Tenant.objects.filter(pk=other_tenant.pk).update(cohort="pool")
    QuotaFactory(tenant=other_tenant, resource=L40S, limit=2)
    other_tenant.refresh_from_db()
    return other_tenant


def _queue(gateway, tenant: Tenant) -> dict:
    return gateway.get(api_version=KUEUE, kind="ClusterQueue", name=f"tenant-{tenant.slug}")


def _flavor_names(queue: dict) -> list[str]:
    return [f["name"] for group in queue["spec"]["resourceGroups"] for f in group["flavors"]]


def test_an_owner_opts_in_on_the_quota_page_and_the_cohort_may_borrow(
    lender, borrower, tenant_owner, login, simulated_gateway,
    django_capture_on_commit_callbacks,
):
    client = login(tenant_owner)
    page = client.get(reverse("tenants:quota-detail", args=["acme"])).content.decode()
    card = page[page.index('id="gpu-lending"'):]
    assert "Not lent" in card and 'id="gpu-lending-form"' in card

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("tenants:quota-detail", args=["acme"]),
                               {"lends_reserved_gpus": "on"})

    assert response.status_code == 302
    lender.refresh_from_db()
    assert lender.lends_reserved_gpus and lender.lends_to_cohort
    event = AuditEvent.objects.get(action="tenant.gpu_lending")
    assert event.actor == tenant_owner and event.changes["lends_reserved_gpus"] == [False, True]
    # Both reconciled after commit: the lender joins the cohort, never borrowing; the shared
    # member lists its flavor, with nothing of its own there.
    lender_queue = _queue(simulated_gateway, lender)
    assert lender_queue["spec"]["cohortName"] == "pool"
    assert "borrowWithinCohort" not in lender_queue["spec"]["preemption"]
    assert LENT_FLAVOR in _flavor_names(_queue(simulated_gateway, borrower))
    borrower.refresh_from_db()
    assert borrower.applied_version == borrower.desired_version > 1
    page = client.get(reverse("tenants:quota-detail", args=["acme"])).content.decode()
    assert "Lent to cohort" in page and 'data-lent="0"' in page

    # And out again: the member stops listing it.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("tenants:quota-detail", args=["acme"]), {})
    assert LENT_FLAVOR not in _flavor_names(_queue(simulated_gateway, borrower))
    assert "cohortName" not in _queue(simulated_gateway, lender)["spec"]
    assert AuditEvent.objects.filter(action="tenant.gpu_lending").count() == 2


def test_members_and_viewers_see_the_choice_but_only_owners_make_it(
    lender, tenant_member, login
):
    client = login(tenant_member)
    page = client.get(reverse("tenants:quota-detail", args=["acme"])).content.decode()
    assert "Not lent" in page and 'id="gpu-lending-form"' not in page
    response = client.post(reverse("tenants:quota-detail", args=["acme"]),
                           {"lends_reserved_gpus": "on"})
    assert response.status_code == 403
    lender.refresh_from_db()
    assert not lender.lends_reserved_gpus
    assert not AuditEvent.objects.filter(action="tenant.gpu_lending").exists()


def test_lending_is_refused_without_a_cohort_or_reserved_gpus(
    tenant, other_tenant, tenant_owner, platform_admin, login
):
    Tenant.objects.filter(pk=tenant.pk).update(isolation=Tenant.Isolation.DEDICATED)
    tenant.refresh_from_db()
    response = login(tenant_owner).post(reverse("tenants:quota-detail", args=["acme"]),
                                        {"lends_reserved_gpus": "on"})
    assert response.status_code == 400
    assert "a platform admin names the cohort it lends to first" in response.content.decode()

    with pytest.raises(ValidationError, match="Only a dedicated tenant"):
        tenant_gpu_lending_set(actor=platform_admin, tenant=other_tenant, lends=True)
    assert not Tenant.objects.filter(lends_reserved_gpus=True).exists()


def test_the_choice_over_the_api(lender, api_client, tenant_owner, tenant_member,
                                 other_tenant):
    url = "/api/v1/tenants/acme/gpu-lending/"
    api_client.force_login(tenant_member)
    assert api_client.get(url).json() == {
        "lends_reserved_gpus": False, "cohort": "pool", "lending": False}
    assert api_client.put(url, {"lends_reserved_gpus": True}, format="json").status_code == 403
    assert api_client.get("/api/v1/tenants/globex/gpu-lending/").status_code == 404

    api_client.force_login(tenant_owner)
    assert api_client.put(url, {"lends_reserved_gpus": "maybe"},
                          format="json").status_code == 400
    body = api_client.put(url, {"lends_reserved_gpus": True}, format="json").json()

    assert body == {"lends_reserved_gpus": True, "cohort": "pool", "lending": True}
    assert AuditEvent.objects.get(action="tenant.gpu_lending").actor == tenant_owner
    (line,) = api_client.get("/api/v1/tenants/acme/quota/").json()["results"]
    assert line["lent"] == 0


def test_a_platform_admin_sets_it_in_django_admin(lender, login, platform_admin,
                                                  django_capture_on_commit_callbacks):
    url = reverse("admin:tenants_tenant_change", args=[lender.pk])
    quota = Quota.objects.get(tenant=lender)
    data = {
        "name": lender.name, "cost_center": "", "status": "active", "isolation": "dedicated",
        "cohort": "pool", "lends_reserved_gpus": "on", "keycloak_group": "",
        "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
        "quotas-TOTAL_FORMS": "1", "quotas-INITIAL_FORMS": "1",
        "quotas-0-id": quota.pk, "quotas-0-tenant": lender.pk,
        "quotas-0-resource": L40S, "quotas-0-limit": "8", "quotas-0-lending_limit": "6",
    }
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = login(platform_admin).post(url, data)

    assert response.status_code == 302, response.content.decode()[:3000]
    lender.refresh_from_db()
    assert lender.lends_to_cohort
    assert Quota.objects.get(tenant=lender).lending_limit == 6
    event = AuditEvent.objects.get(action="tenant.update")
    assert event.actor == platform_admin
    assert event.changes["lends_reserved_gpus"] == ["False", "True"]
    assert callbacks  # its reconcile (and its cohort's) queued after commit


def test_a_shared_tenants_spec_reads_every_lender_in_one_query(
    borrower, django_assert_num_queries
):
    for n in range(3):
        lender = Tenant.objects.create(slug=f"vault-{n}", name=f"Vault {n}", cohort="pool",
                                       isolation="dedicated", lends_reserved_gpus=n < 2)
        QuotaFactory(tenant=lender, resource=L40S, limit=8, lending_limit=4 if n else None)
        QuotaFactory(tenant=lender, resource="cpu", limit=64)
    # Its quota, every peer's and lender's at once, and its endpoints (for their queues).
    with django_assert_num_queries(3):
        spec = tenant_spec(tenant=borrower)

    assert [(f.lender, f.model_key) for f in spec.lent_flavors] == [
        ("vault-0", "nvidia-l40s"), ("vault-1", "nvidia-l40s")]
    assert spec.cohort_lendable == {L40S: 8 + 4}  # vault-2 did not opt in; no CPU lent


def test_what_the_cohort_borrows_of_a_lender_shows_on_its_quota_page_and_the_fleets(
    lender, borrower, kube_gateway, kube_emulator, tenant_owner, platform_admin, login
):
    Tenant.objects.filter(pk=lender.pk).update(lends_reserved_gpus=True)
    for tenant in (lender, borrower):
        tenant_reconcile(tenant_id=tenant.pk)
    # Kueue reports borrowing in the borrower's ClusterQueue: 6 of acme's reserved L40S.
    queue = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-globex")
    assert [f["name"] for f in queue["spec"]["resourceGroups"][1]["flavors"]] == [
        "gpu-nvidia-l40s", LENT_FLAVOR]
    kube_emulator.put_object({**queue, "status": {"flavorsUsage": [
        {"name": "gpu-nvidia-l40s", "resources": [
            {"name": "nvidia.com/gpu", "total": "2", "borrowed": "0"}]},
        {"name": LENT_FLAVOR, "resources": [
            {"name": "nvidia.com/gpu", "total": "6", "borrowed": "6"}]},
    ]}})

    for tenant in (borrower, lender):
        tenant_reconcile(tenant_id=tenant.pk)

    theirs = Quota.objects.get(tenant=borrower, resource=L40S)
    assert (theirs.in_use, theirs.borrowed) == (8, 6)
    assert Quota.objects.get(tenant=lender, resource=L40S).lent == 6
    page = login(tenant_owner).get(reverse("tenants:quota-detail", args=["acme"])).content.decode()
    assert 'data-lent="6"' in page and "6 borrowed by others now" in page
    fleet = login(platform_admin).get(reverse("inventory:fleet")).content.decode()
    row = re.search(r'<tr data-cohort="pool" data-resource="gpu:nvidia-l40s">(.*?)</tr>', fleet,
                    re.S)
    cells = [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]
    # Two members, 2 + 8 of quota, 8 in use (all the borrower's), 6 of it lent by acme.
    assert cells[2:] == ["2", "10", "8", "6", "2", "6 of 8"]


def test_a_dedicated_tenants_quota_may_cap_what_it_lends_but_never_borrows(lender):
    quota = Quota.objects.get(tenant=lender)
    quota.lending_limit = 6
    quota.full_clean()
    quota.borrowing_limit = 2
    with pytest.raises(ValidationError) as refused:
        quota.full_clean()
    assert refused.value.message_dict == {
        "borrowing_limit": ["A dedicated tenant never borrows: it may only lend its GPUs."]}
