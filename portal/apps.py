from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class WiringConfig(AppConfig):
    """The wiring: settings, URLs, composed pages, the configuration reference command."""

    name = "portal"
    label = "wiring"
    verbose_name = "Wiring"


class PortalAdminConfig(AdminConfig):
    default_site = "portal.admin_site.PortalAdminSite"
