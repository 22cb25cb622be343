"""Navigation by role and the demo banner, for every page."""

from functools import cache

from django.conf import settings
from django.urls import get_script_prefix, get_urlconf, reverse

from core.openid import oidc_enabled
from tenants.access import access_for
from tenants.models import RoleAssignment
from tenants.quota.views import waiting_count

TENANT_PAGES = (
    "tenants:dashboard",
    "tenants:member-list",
    "tenants:workload-list",
    "tenants:quota-detail",
    "tenants:quota-request-list",
    "tenants:quota-request-create",
    "tenants:quota-request-detail",
)


# Every URL the navigation and base.html link to. Reversed once per process (and URL
# configuration): ten `reverse()` calls were a quarter of what base.html cost each page.
_NAMED_URLS = {
    "home": "home",
    "tenant_home": "tenants:home",
    "workloads": "tenants:workloads",
    "quota": "tenants:quota",
    "tenant_billing": "billing:tenant",
    "invoices": "billing:invoices",
    "cost_centers": "billing:cost-centers",
    "usage": "billing:usage",
    "fleet": "inventory:fleet",
    "requests": "tenants:requests",
    "tenant_list": "tenants:tenant-list",
    "admin": "admin:index",
    "api_tokens": "api-tokens",
    "logout": "logout",
    "capacity": "inventory:capacity",
    "rates": "billing:rates",
    "webhooks": "tenants:webhooks",
}


@cache
def _reversed(urlconf, script_prefix: str) -> dict[str, str]:
    return {key: reverse(name, urlconf=urlconf) for key, name in _NAMED_URLS.items()}


def portal_urls() -> dict[str, str]:
    """The navigation's and base.html's URLs, reversed once per URL configuration and prefix."""
    return _reversed(get_urlconf(), get_script_prefix())


def _nav_for(user, request) -> list[dict]:
    access = access_for(user)
    url = portal_urls()
    items: list[dict] = []
    if access.tenant_roles:
        items += [
            {
                "label": "Dashboard",
                "url": url["tenant_home"],
                "icon": "speedometer2",
                "views": ("tenants:dashboard", "tenants:member-list"),
            },
            {
                "label": "Workloads",
                "url": url["workloads"],
                "icon": "boxes",
                "views": ("tenants:workload-list",),
            },
            {
                "label": "Quota",
                "url": url["quota"],
                "icon": "pie-chart",
                "views": (
                    "tenants:quota-detail",
                    "tenants:quota-request-list",
                    "tenants:quota-request-create",
                    "tenants:quota-request-detail",
                ),
            },
            {"label": "Usage & invoices", "url": url["tenant_billing"], "icon": "receipt"},
        ]
    if access.finance:
        items += [
            {"label": "Invoices", "url": url["invoices"], "icon": "file-earmark-text",
             "views": ("billing:invoices", "billing:invoice-detail")},
            {"label": "Cost centers", "url": url["cost_centers"], "icon": "diagram-3"},
            {"label": "Usage", "url": url["usage"], "icon": "graph-up"},
        ]
    if access.platform_admin:
        items += [
            {"label": "Fleet", "url": url["fleet"], "icon": "hdd-rack"},
            {
                "label": "Requests",
                "url": url["requests"],
                "icon": "inbox",
                # What waits for a decision: one COUNT, made only when a page shows the
                # navigation (Django admin's pages do not), once per request.
                "badge": cache(lambda: waiting_count(request)),
                "badge_label": "waiting for a decision",
            },
        ]
    if access.sees_all_tenants:
        # Finance and platform admins may open every tenant's pages: this is the way in.
        items.append({
            "label": "Tenants",
            "url": url["tenant_list"],
            "icon": "buildings",
            "views": ("tenants:tenant-list",) + (() if access.tenant_roles else TENANT_PAGES),
        })
    if access.platform_admin:
        items.append({"label": "Webhooks", "url": url["webhooks"], "icon": "broadcast",
                      "views": ("tenants:webhooks", "tenants:admin-webhook-detail")})
        items.append({"label": "Django admin", "url": url["admin"], "icon": "gear"})
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
        "nav_items": _mark_active(_nav_for(user, request), request) if authenticated else [],
        "user_access": access_for(user) if authenticated else None,
        "portal_urls": portal_urls(),
        "user_role_labels": (
            [RoleAssignment.Role(role).label for role in access_for(user).roles]
            if authenticated
            else []
        ),
    }
