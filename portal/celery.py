"""The Celery application: configuration comes from Django settings (CELERY_* names)."""

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_ready.connect
def _sweep_when_a_worker_starts(sender=None, **kwargs) -> None:
    """Queue the sweeps at once instead of a full period after beat (re)starts: work left
    pending while no worker ran (lost messages, mail, reconciles) resumes when one is back."""
    from django.conf import settings

    for task_name in settings.SWEEPS_AT_WORKER_START:
        app.send_task(task_name)
