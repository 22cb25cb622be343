"""The admin site as a platform admin sees it: the index lists every app's models (list pages
do not build that list again); the door opens on the platform admin role, not on is_staff."""

import re
from pathlib import Path

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_the_index_lists_each_apps_models_with_their_links(login, platform_admin):
    html = login(platform_admin).get(reverse("admin:index")).content.decode()

    for url in ["/admin/tenants/quotarequest/", "/admin/inventory/node/",
                "/admin/billing/invoice/", "/admin/portal/auditevent/"]:
        assert f'href="{url}"' in html
    # The review queue has no add link: tenants ask in the portal.
    assert 'href="/admin/tenants/tenant/add/"' in html
    assert 'href="/admin/tenants/quotarequest/add/"' not in html


def test_a_list_page_does_not_build_every_apps_model_list(login, platform_admin):
    """The index and an app's page list the models; a list page links back to them through its
    breadcrumbs and does not ask every ModelAdmin for its permissions and URLs."""
    from django.contrib.admin.sites import AdminSite

    client = login(platform_admin)
    calls = []
    original = AdminSite._build_app_dict

    def counted(site, request, label=None):
        calls.append(label)
        return original(site, request, label)

    AdminSite._build_app_dict = counted
    try:
        page = client.get(reverse("admin:tenants_tenant_changelist"))
        assert page.status_code == 200
        assert calls == []
        assert 'id="nav-sidebar"' not in page.content.decode()
        assert client.get(reverse("admin:app_list", args=["tenants"])).status_code == 200
        assert calls == ["tenants"]
    finally:
        AdminSite._build_app_dict = original


def test_a_tenant_member_is_not_let_in_and_gets_no_app_list(login, tenant_member):
    response = login(tenant_member).get(reverse("admin:tenants_tenant_changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_admin_code_writes_no_html_marked_safe_by_hand():
    """Admin pages come from Django's templates and format_html: no module of admin code, and
    no admin template, marks text safe itself (a place to forget escaping, and the road back to
    HTML written in Python)."""
    root = Path(__file__).resolve().parents[2]
    code = [
        path
        for app in ("portal", "tenants", "inventory", "billing")
        for path in root.glob(f"{app}/**/*.py")
        if path.stem == "admin" or path.stem.startswith("admin_") or path.parent.name == "admin"
    ]
    templates = [*root.glob("templates/admin/**/*.html"), *root.glob("templates/*/admin/**/*.html")]
    assert len(code) >= 8 and templates  # the globs found the admin
    for path in code:
        assert not re.search(r"\bmark_safe\b|\bSafeString\b", path.read_text()), path
    for path in templates:
        assert not re.search(r"\|\s*safe\b|autoescape\s+off", path.read_text()), path

