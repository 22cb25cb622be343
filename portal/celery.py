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


@signals.celeryd_after_setup.connect
def _serve_cluster_queues(sender=None, instance=None, **kwargs) -> None:
    """A worker also serves the queues of the clusters CELERY_WORKER_CLUSTERS names ("*": every
    cluster in service when it starts), beside the queues it was started with."""
    from django.conf import settings

    from core.queueing import cluster_queue
    from inventory.models import Cluster

    wanted = settings.CELERY_WORKER_CLUSTERS
    if "*" in wanted:
        wanted = list(Cluster.objects.in_service().values_list("slug", flat=True))
    for cluster in wanted:
        instance.app.amqp.queues.select_add(cluster_queue(cluster))
