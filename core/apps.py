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

        from . import (
            celery_metrics,
            checks,  # noqa: F401 - importing registers the checks
            log_context,
            metrics,
            tracing,
        )

        metrics.connect_celery_signals()
        log_context.connect_celery_signals()
        # Before the WSGI handler loads the middleware, which the Django instrumentation extends.
        tracing.configure_tracing()
        metrics.register_collector(celery_metrics.QueueLengthCollector())
        metrics.register_collector(celery_metrics.BeatLastRunCollector())
        # Register every app's tasks now (Celery's autodiscovery waits for a worker to start):
        # services queue tasks by name, and an unregistered name would skip eager mode.
        current_app.autodiscover_tasks(force=True)
