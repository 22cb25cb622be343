"""Tenant isolation is one rule, and navigation follows the user's roles."""

import pytest
from django.urls import reverse

from tenants.access import tenants_visible_to


def test_members_see_only_their_tenants(tenant_member, other_tenant_member, tenant, other_tenant):
    assert list(tenants_visible_to(tenant_member)) == [tenant]
    assert list(tenants_visible_to(other_tenant_member)) == [other_tenant]


def test_platform_admin_and_finance_see_every_tenant(platform_admin, finance, tenant, other_tenant):
    assert set(tenants_visible_to(platform_admin)) == {tenant, other_tenant}
    assert set(tenants_visible_to(finance)) == {tenant, other_tenant}


def test_suspended_tenant_is_hidden_from_its_members(tenant_member, tenant):
    tenant.status = tenant.Status.SUSPENDED
    tenant.save()
    assert list(tenants_visible_to(tenant_member)) == []


@pytest.mark.parametrize(
    "page", ["tenants:dashboard", "tenants:workload-list", "tenants:quota-detail"]
)
def test_another_tenants_pages_are_404(login, other_tenant_member, tenant, page):
    response = login(other_tenant_member).get(reverse(page, args=[tenant.slug]))
    assert response.status_code == 404
    assert b"Page not found" in response.content


def test_dashboard_shows_tenant_members_and_quota(login, tenant_owner, tenant_member, tenant):
    from tests.factories import QuotaFactory

    QuotaFactory(tenant=tenant, resource="gpu:nvidia-h200", limit=16)
    response = login(tenant_member).get(reverse("tenants:dashboard", args=[tenant.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Acme Labs" in html
    assert "owner@example.com" in html and "member@example.com" in html
    assert "NVIDIA H200 141GB GPUs" in html and "0 / 16" in html


def test_dashboard_query_count_does_not_grow_with_members(
    login, tenant_owner, tenant, django_assert_max_num_queries
):
    from tests.factories import MembershipFactory, QuotaFactory

    client = login(tenant_owner)
    url = reverse("tenants:dashboard", args=[tenant.slug])
    client.get(url)
    # Session, user, roles, then the page's own; an unchanged session is not written back.
    with django_assert_max_num_queries(12) as few:
        client.get(url)
    MembershipFactory.create_batch(30, tenant=tenant)
    for resource in ["cpu", "memory-gib", "storage-gib", "gpu:nvidia-l40s"]:
        QuotaFactory(tenant=tenant, resource=resource, limit=4)
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(url)


def test_dashboard_writes_the_session_only_when_the_current_tenant_changes(
    login, tenant_owner, tenant, django_assert_max_num_queries
):
    from tests.factories import MembershipFactory, TenantFactory

    other = TenantFactory(slug="other-lab", name="Other Lab")
    MembershipFactory(tenant=other, user=tenant_owner, role="member")
    client = login(tenant_owner)
    dashboard = reverse("tenants:dashboard", args=[tenant.slug])
    client.get(dashboard)

    with django_assert_max_num_queries(12) as again:
        assert client.get(dashboard).status_code == 200
    writes = [q["sql"] for q in again.captured_queries
              if "django_session" in q["sql"] and not q["sql"].startswith("SELECT")]
    assert writes == []
    assert client.session["current_tenant"] == tenant.slug

    # Another tenant's page moves the current tenant: the top-level links follow it.
    client.get(reverse("tenants:dashboard", args=[other.slug]))
    assert client.session["current_tenant"] == other.slug
    response = client.get(reverse("tenants:workloads"))
    assert response.url == reverse("tenants:workload-list", args=[other.slug])


NAV = {
    "tenant_member": ["Dashboard", "Workloads", "Quota", "Usage & invoices"],
    "finance": ["Invoices", "Cost centers", "Usage", "Tenants"],
    "platform_admin": ["Fleet", "Requests", "Tenants", "Webhooks", "Django admin"],
}


@pytest.mark.parametrize("role", NAV)
def test_navigation_follows_the_role(request, login, role):
    user = request.getfixturevalue(role)
    response = login(user).get("/", follow=True)
    assert response.status_code == 200
    labels = [item["label"] for item in response.context["nav_items"]]
    assert labels == NAV[role]


def test_user_without_role_or_membership_sees_no_access_page(login, no_role_user):
    response = login(no_role_user).get("/", follow=True)
    assert response.redirect_chain[-1][0] == reverse("no-access")
    assert b"No access yet" in response.content


@pytest.mark.parametrize(
    ("role", "url", "status"),
    [
        ("tenant_member", "/fleet/", 403),
        ("tenant_member", "/billing/invoices/", 403),
        ("tenant_member", "/tenants/requests/", 404),
        ("finance", "/fleet/", 403),
        ("finance", "/billing/invoices/", 200),
        ("platform_admin", "/fleet/", 200),
        ("platform_admin", "/requests/", 200),
        ("platform_admin", "/admin/", 200),
        ("tenant_member", "/admin/", 302),
    ],
)
def test_role_pages_are_closed_to_other_roles(request, login, role, url, status):
    user = request.getfixturevalue(role)
    assert login(user).get(url).status_code == status


def test_pages_need_a_signed_in_user(client, tenant):
    response = client.get(reverse("tenants:dashboard", args=[tenant.slug]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_demo_banner_shows_with_the_simulated_fleet(login, tenant_member, settings):
    settings.FLEET_BACKEND = "simulated"
    assert b"Demo mode: simulated fleet" in login(tenant_member).get("/", follow=True).content
    settings.FLEET_BACKEND = "kubernetes"
    assert b"Demo mode: simulated fleet" not in login(tenant_member).get("/", follow=True).content


@pytest.mark.django_db
def test_a_platform_admins_permissions_come_from_the_role_without_reading_permission_tables(
    login, platform_admin
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = login(platform_admin)
    client.get("/admin/")
    with CaptureQueriesContext(connection) as captured:
        response = client.get("/admin/")  # every model's permissions, for the index's links

    assert response.status_code == 200
    assert 'href="/admin/tenants/quotarequest/"' in response.content.decode()
    assert not [q for q in captured.captured_queries if "auth_permission" in q["sql"]]
    assert platform_admin.has_perm("tenants.delete_tenant")


@pytest.mark.django_db
def test_model_permissions_still_grant_and_deny_without_a_platform_role(client):
    from django.contrib.auth.models import Permission

    from tests.factories import UserFactory

    staff = UserFactory(username="staff-reader", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_tenant"))
    staff = type(staff).objects.get(pk=staff.pk)  # no cached permissions

    assert staff.has_perm("tenants.view_tenant")
    assert not staff.has_perm("tenants.delete_tenant")
    assert staff.has_module_perms("tenants") and not staff.has_module_perms("inventory")
