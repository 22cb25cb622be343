"""Django admin for platform admins: the role, not the is_staff flag, opens the door."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.urls import get_script_prefix, reverse
from django.utils.translation import get_language

from tenants.access import is_platform_admin

from .templatetags.portal_admin import CachedAppList


class PortalAdminSite(admin.AdminSite):
    site_header = "AI Factory Portal administration"
    site_title = "AI Factory admin"
    index_title = "Fleet, tenants and billing"

    def __init__(self, name="admin"):
        super().__init__(name)
        # The app lists a platform admin sees, by (app label, script prefix, language, models).
        self._admin_app_lists: dict[tuple, list[dict]] = {}

    def has_permission(self, request) -> bool:
        return bool(request.user.is_active and is_platform_admin(request.user))

    def get_app_list(self, request, app_label=None):
        """Django's app list (every page's nav sidebar), built once per process for platform
        admins: PlatformRoleBackend grants them every permission, so what they see depends only
        on the registered ModelAdmins (their fixed has_*_permission answers) and the URLs.
        Building it asked ~150 permission checks and ~50 reverses on every admin page.
        Anyone else (the login page's visitor) gets Django's own build."""
        if not self.has_permission(request):
            return super().get_app_list(request, app_label)
        key = (app_label, get_script_prefix(), get_language(), len(self._registry))
        app_list = self._admin_app_lists.get(key)
        if app_list is None:
            app_list = super().get_app_list(request, app_label)
            self._admin_app_lists[key] = app_list
        # Copies: a caller may change what it was given.
        return CachedAppList(
            key,
            [
                {**app, "models": [{**m, "perms": dict(m["perms"])} for m in app["models"]]}
                for app in app_list
            ],
        )

    def login(self, request, extra_context=None):
        # With local accounts off, the admin's password form must not work either: send people
        # to the portal's sign-in page (Keycloak), and refuse signed-in non-admins outright.
        if not settings.LOCAL_LOGIN_ENABLED:
            if request.user.is_authenticated:
                raise PermissionDenied
            next_url = request.GET.get(REDIRECT_FIELD_NAME) or reverse("admin:index")
            return redirect_to_login(next_url)
        return super().login(request, extra_context)
