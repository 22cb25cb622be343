"""Navigation by role and the demo banner, for every page."""

from django.conf import settings
from django.urls import reverse

from tenants.access import access_for


def _nav_for(user) -> list[dict[str, str]]:
    access = access_for(user)
    items: list[dict[str, str]] = []
    if access.tenant_roles:
        items += [
            {"label": "Dashboard", "url": reverse("tenants:home"), "icon": "speedometer2"},
            {"label": "Workloads", "url": reverse("tenants:workloads"), "icon": "boxes"},
            {"label": "Quota", "url": reverse("tenants:quota"), "icon": "pie-chart"},
            {"label": "Usage & invoices", "url": reverse("billing:tenant"), "icon": "receipt"},
        ]
    if access.finance:
        items += [
            {"label": "Invoices", "url": reverse("billing:invoices"), "icon": "file-earmark-text"},
            {"label": "Usage", "url": reverse("billing:usage"), "icon": "graph-up"},
        ]
    if access.platform_admin:
        items += [
            {"label": "Fleet", "url": reverse("inventory:fleet"), "icon": "hdd-rack"},
            {"label": "Requests", "url": reverse("tenants:requests"), "icon": "inbox"},
            {"label": "Django admin", "url": reverse("admin:index"), "icon": "gear"},
        ]
    return items


def portal(request) -> dict:
    user = getattr(request, "user", None)
    authenticated = bool(user and user.is_authenticated)
    return {
        "demo_mode": settings.FLEET_BACKEND == "simulated",
        "local_login_enabled": settings.LOCAL_LOGIN_ENABLED,
        "nav_items": _nav_for(user) if authenticated else [],
        "user_access": access_for(user) if authenticated else None,
    }
