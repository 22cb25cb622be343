"""Each cluster's work has a queue of its own, and a worker serves the queue of a cluster added
after it started without a restart (the probe sweep asks it to) — a real Celery worker on Redis,
the simulated fleet."""

import time

import pytest

from core.queueing import send_task
from inventory.models import Cluster
from portal.celery import app as celery_app
from tests.support.fixtures_celery import wait_until

PROBE = "inventory.tasks.cluster_probe_task"


def _contacted(slug: str) -> bool:
    return Cluster.objects.get(slug=slug).last_contact_at is not None


@pytest.mark.worker
def test_a_cluster_added_after_the_worker_started_is_served_without_a_restart(celery_worker):
    celery_worker(FLEET_BACKEND="simulated")
    send_task(PROBE, "main", cluster="main")  # main's queue: served from the worker's start
    wait_until(lambda: _contacted("main"), timeout=60)

    Cluster.objects.create(slug="late", name="Late hall")
    send_task(PROBE, "late", cluster="late")
    time.sleep(3)
    assert not _contacted("late")  # its queue is not served yet: the message waits there

    celery_app.send_task("inventory.tasks.clusters_probe_sweep_task")
    wait_until(lambda: _contacted("late"), timeout=30)


@pytest.mark.worker
def test_a_worker_serves_only_the_clusters_it_is_given(celery_worker):
    Cluster.objects.create(slug="east", name="East hall")
    celery_worker(FLEET_BACKEND="simulated", CELERY_WORKER_CLUSTERS="east")
    send_task(PROBE, "east", cluster="east")
    send_task(PROBE, "main", cluster="main")
    wait_until(lambda: _contacted("east"), timeout=60)
    celery_app.send_task("inventory.tasks.clusters_probe_sweep_task")  # asks it to serve more
    time.sleep(3)
    assert not _contacted("main")  # another worker's cluster: left in its queue
