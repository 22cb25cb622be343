"""Navigation by role and the demo banner, for every page."""

from functools import cache

from django.conf import settings
from django.urls import reverse

from tenants.access import access_for
from tenants.models import RoleAssignment
from tenants.quota.selectors import quota_requests_pending_count

from .openid import oidc_enabled

TENANT_PAGES = (
    "tenants:dashboard",
    "tenants:member-list",
    "tenants:workload-list",
    "tenants:quota-detail",
    "tenants:quota-request-list",
    "tenants:quota-request-create",
    "tenants:quota-request-detail",
)


def _nav_for(user) -> list[dict]:
    access = access_for(user)
    items: list[dict] = []
    if access.tenant_roles:
        items += [
            {
                "label": "Dashboard",
                "url": reverse("tenants:home"),
                "icon": "speedometer2",
                "views": ("tenants:dashboard", "tenants:member-list"),
            },
            {
                "label": "Workloads",
                "url": reverse("tenants:workloads"),
                "icon": "boxes",
                "views": ("tenants:workload-list",),
            },
            {
                "label": "Quota",
                "url": reverse("tenants:quota"),
                "icon": "pie-chart",
                "views": (
                    "tenants:quota-detail",
                    "tenants:quota-request-list",
                    "tenants:quota-request-create",
                    "tenants:quota-request-detail",
                ),
            },
            {"label": "Usage & invoices", "url": reverse("billing:tenant"), "icon": "receipt"},
        ]
    if access.finance:
        items += [
            {"label": "Invoices", "url": reverse("billing:invoices"), "icon": "file-earmark-text",
             "views": ("billing:invoices", "billing:invoice-detail")},
            {"label": "Cost centers", "url": reverse("billing:cost-centers"), "icon": "diagram-3"},
            {"label": "Usage", "url": reverse("billing:usage"), "icon": "graph-up"},
        ]
    if access.platform_admin:
        items += [
            {"label": "Fleet", "url": reverse("inventory:fleet"), "icon": "hdd-rack"},
            {
                "label": "Requests",
                "url": reverse("tenants:requests"),
                "icon": "inbox",
                # What waits for a decision: one COUNT, made only when a page shows the
                # navigation (Django admin's pages do not), once per request.
                "badge": cache(lambda: quota_requests_pending_count()),
                "badge_label": "waiting for a decision",
            },
        ]
    if access.sees_all_tenants:
        # Finance and platform admins may open every tenant's pages: this is the way in.
        items.append({
            "label": "Tenants",
            "url": reverse("tenants:tenant-list"),
            "icon": "buildings",
            "views": ("tenants:tenant-list",) + (() if access.tenant_roles else TENANT_PAGES),
        })
    if access.platform_admin:
        items.append({"label": "Django admin", "url": reverse("admin:index"), "icon": "gear"})
    return items


def _mark_active(items: list[dict], request) -> list[dict]:
    """Highlight the item the page belongs to: a view it names, else the longest URL prefix."""
    match = getattr(request, "resolver_match", None)
    view = match.view_name if match else ""
    candidates = [
        item
        for item in items
        if view in item.get("views", ()) or request.path.startswith(item["url"])
    ]
    best = max(
        candidates,
        key=lambda item: (view in item.get("views", ()), len(item["url"])),
        default=None,
    )
    for item in items:
        item["active"] = item is best
    return items


def portal(request) -> dict:
    user = getattr(request, "user", None)
    authenticated = bool(user and user.is_authenticated)
    return {
        "demo_mode": settings.FLEET_BACKEND == "simulated",
        "local_login_enabled": settings.LOCAL_LOGIN_ENABLED,
        "oidc_enabled": oidc_enabled(),
        "nav_items": _mark_active(_nav_for(user), request) if authenticated else [],
        "user_access": access_for(user) if authenticated else None,
        "user_role_labels": (
            [RoleAssignment.Role(role).label for role in access_for(user).roles]
            if authenticated
            else []
        ),
    }
