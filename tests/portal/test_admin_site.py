"""The admin site as a platform admin sees it: the nav sidebar lists every app's models and
marks the page it is on; the door opens on the platform admin role, not on is_staff."""

import re
from pathlib import Path

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def _sidebar(html: str) -> str:
    return html[html.index('<nav class="sticky" id="nav-sidebar"') :]


def test_the_nav_sidebar_marks_the_page_it_is_on(login, platform_admin):
    client = login(platform_admin)

    tenants = _sidebar(client.get(reverse("admin:tenants_tenant_changelist")).content.decode())
    requests = _sidebar(
        client.get(reverse("admin:tenants_quotarequest_changelist")).content.decode()
    )

    assert '<tr class="model-tenant current-model">' in tenants
    assert '<tr class="model-quotarequest current-model">' not in tenants
    assert '<tr class="model-quotarequest current-model">' in requests
    assert 'href="/admin/tenants/tenant/" aria-current="page"' in tenants
    assert 'href="/admin/tenants/tenant/" aria-current="page"' not in requests


def test_the_nav_sidebar_lists_each_apps_models_with_their_links(login, platform_admin):
    html = _sidebar(
        login(platform_admin).get(reverse("admin:inventory_site_changelist")).content.decode()
    )

    for url in ["/admin/tenants/quotarequest/", "/admin/inventory/node/",
                "/admin/billing/invoice/", "/admin/portal/auditevent/"]:
        assert f'href="{url}"' in html
    # The review queue has no add link: tenants ask in the portal.
    assert 'href="/admin/tenants/tenant/add/"' in html
    assert 'href="/admin/tenants/quotarequest/add/"' not in html
    assert re.findall(r'<tr class="model-(\w+) current-model">', html) == ["site"]


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

