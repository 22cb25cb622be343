"""Django admin for platform admins: the role, not the is_staff flag, opens the door."""

from functools import partial

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from django.utils.functional import SimpleLazyObject

from tenants.access import is_platform_admin


class PortalAdminSite(admin.AdminSite):
    site_header = "AI Factory Portal administration"
    site_title = "AI Factory admin"
    index_title = "Fleet, tenants and billing"
    # The index lists every app's models; a list page is not rendered with all of them again.
    enable_nav_sidebar = False

    def get_app_list(self, request, app_label=None):
        # Built when a page shows it (the index, an app's page), not for every page's context.
        return SimpleLazyObject(partial(super().get_app_list, request, app_label))

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
