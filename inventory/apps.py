from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"
    verbose_name = "Hardware inventory"

    def ready(self) -> None:
        # Register the tasks in every process, so that services can queue them by name.
        from . import tasks  # noqa: F401
