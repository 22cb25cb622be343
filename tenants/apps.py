from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants"

    def ready(self) -> None:
        from inventory import tenancy

        from . import tasks  # noqa: F401 - registers the tasks, so that services queue them by name
        from .access.directory import AccessRulesDirectory

        # The inventory, below tenants, asks them its questions through this directory.
        tenancy.install(AccessRulesDirectory())
