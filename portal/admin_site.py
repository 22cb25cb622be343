"""Django admin for platform admins: the role, not the is_staff flag, opens the door."""

from django.contrib import admin

from tenants.access import is_platform_admin


class PortalAdminSite(admin.AdminSite):
    site_header = "AI Factory Portal administration"
    site_title = "AI Factory admin"
    index_title = "Fleet, tenants and billing"

    def has_permission(self, request) -> bool:
        return bool(request.user.is_active and is_platform_admin(request.user))
