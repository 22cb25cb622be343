"""The Celery application: configuration comes from Django settings (CELERY_* names)."""

import os

from celery import Celery, signals
from celery.worker.control import control_command, ok

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


def _cluster_queues() -> list[str]:
    """The queues of the clusters CELERY_WORKER_CLUSTERS names ("*": every one in service)."""
    from django.conf import settings

    from core.queueing import cluster_queue
    from inventory.models import Cluster

    wanted = settings.CELERY_WORKER_CLUSTERS
    if "*" in wanted:
        wanted = list(Cluster.objects.in_service().values_list("slug", flat=True))
    return [cluster_queue(cluster) for cluster in wanted]


@signals.celeryd_after_setup.connect
def _serve_cluster_queues(sender=None, instance=None, **kwargs) -> None:
    """A worker also serves the queues of the clusters CELERY_WORKER_CLUSTERS names ("*": every
    cluster in service when it starts), beside the queues it was started with."""
    for queue in _cluster_queues():
        instance.app.amqp.queues.select_add(queue)


@control_command()
def serve_clusters(state, **kwargs) -> dict:
    """Remote control (core.queueing.workers_serve_clusters, from the probe sweep): serve the
    queues of the clusters added since this worker started, as CELERY_WORKER_CLUSTERS says."""
    from django.db import close_old_connections

    close_old_connections()  # the consumer's own thread: no connection left from long ago
    consumer = state.consumer
    added = [queue for queue in _cluster_queues()
             if not consumer.task_consumer.consuming_from(queue)]
    for queue in added:
        consumer.call_soon(consumer.add_task_queue, queue)
    return ok(f"serving {', '.join(added) or 'no new queue'}")
