from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Portal"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import metrics

        metrics.connect_celery_signals()


class PortalAdminConfig(AdminConfig):
    default_site = "portal.admin_site.PortalAdminSite"
