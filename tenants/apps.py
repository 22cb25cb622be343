from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants"

    def ready(self) -> None:
        # Register the tasks in every process, so that services can queue them by name
        # (and eager mode runs them in-process instead of sending them nowhere).
        from . import tasks  # noqa: F401
