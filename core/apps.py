from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    # The tables, migrations and permissions of these models were named when they lived in
    # portal/: the label keeps them.
    label = "portal"
    verbose_name = "Portal"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from celery import current_app

        from . import checks, metrics  # noqa: F401 - importing registers the checks

        metrics.connect_celery_signals()
        # Register every app's tasks now (Celery's autodiscovery waits for a worker to start):
        # services queue tasks by name, and an unregistered name would skip eager mode.
        current_app.autodiscover_tasks(force=True)
