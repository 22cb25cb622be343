"""Django admin for platform admins: the role, not the is_staff flag, opens the door."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from tenants.access import is_platform_admin


class PortalAdminSite(admin.AdminSite):
    site_header = "AI Factory Portal administration"
    site_title = "AI Factory admin"
    index_title = "Fleet, tenants and billing"

    def has_permission(self, request) -> bool:
        return bool(request.user.is_active and is_platform_admin(request.user))

    def login(self, request, extra_context=None):
        # With local accounts off, the admin's password form must not work either: send people
        # to the portal's sign-in page (Keycloak), and refuse signed-in non-admins outright.
        if not settings.LOCAL_LOGIN_ENABLED:
            if request.user.is_authenticated:
                raise PermissionDenied
            next_url = request.GET.get(REDIRECT_FIELD_NAME) or reverse("admin:index")
            return redirect_to_login(next_url)
        return super().login(request, extra_context)
