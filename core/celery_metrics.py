"""Gauges of the Celery side read at scrape time, so that they are true whichever process
serves /metrics: how many messages wait in each queue (from the Redis broker), and when beat
last sent each periodic task (from django-celery-beat's table, which beat writes).

`portal_celery_queue_length{queue}` is absent, not zero, while the broker cannot be read: an
alert on a backlog must not read an outage as an empty queue (alert on the broker separately).
"""

from __future__ import annotations

import logging

from celery import current_app
from prometheus_client.core import GaugeMetricFamily

from .metrics import broker_redis

logger = logging.getLogger(__name__)

# kombu's Redis transport keeps a queue's messages of priority p > 0 in a list of its own.
_PRIORITY_SEPARATOR = "\x06\x16"
_PRIORITY_STEPS = (0, 3, 6, 9)


def portal_queues() -> list[str]:
    """The queues the portal sends to: the default one and any a route names."""
    conf = current_app.conf
    queues = {conf.task_default_queue}
    for route in (conf.task_routes or {}).values() if isinstance(conf.task_routes, dict) else ():
        if isinstance(route, dict) and route.get("queue"):
            queues.add(route["queue"])
    return sorted(queues)


def queue_lengths() -> dict[str, int] | None:
    """Messages waiting per queue; None when there is no Redis broker or it did not answer."""
    client = broker_redis()
    if client is None:
        return None
    queues = portal_queues()
    try:
        pipe = client.pipeline(transaction=False)
        for queue in queues:
            for step in _PRIORITY_STEPS:
                pipe.llen(queue if step == 0 else f"{queue}{_PRIORITY_SEPARATOR}{step}")
        counts = pipe.execute()
    except Exception:  # /metrics still answers without the queue lengths
        logger.warning("Could not read the Celery queue lengths from Redis", exc_info=True)
        return None
    per_queue = len(_PRIORITY_STEPS)
    return {
        queue: sum(counts[i * per_queue : (i + 1) * per_queue]) for i, queue in enumerate(queues)
    }


class QueueLengthCollector:
    """`portal_celery_queue_length{queue}`: messages waiting in each queue, read at scrape."""

    def family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "portal_celery_queue_length",
            "Messages waiting in each Celery queue the portal uses (read from the broker).",
            labels=["queue"],
        )

    def describe(self):  # registering reads nothing
        yield self.family()

    def collect(self):
        lengths = queue_lengths()
        if lengths is None:
            return
        family = self.family()
        for queue, length in lengths.items():
            family.add_metric([queue], length)
        yield family


def beat_last_runs() -> dict[str, float] | None:
    """Unix time beat last sent each periodic task (by schedule entry name); None if unread."""
    from django_celery_beat.models import PeriodicTask

    try:
        rows = PeriodicTask.objects.exclude(last_run_at=None).values_list("name", "last_run_at")
        return {name: last_run.timestamp() for name, last_run in rows}
    except Exception:  # the database is down: readiness says so, /metrics still answers
        logger.warning("Could not read beat's last runs", exc_info=True)
        return None


class BeatLastRunCollector:
    """`portal_beat_last_run_timestamp_seconds{task}`: when beat last sent each periodic task."""

    def family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "portal_beat_last_run_timestamp_seconds",
            "Unix time beat last sent each periodic task (by its schedule entry's name).",
            labels=["task"],
        )

    def describe(self):  # registering reads nothing
        yield self.family()

    def collect(self):
        runs = beat_last_runs()
        if runs is None:
            return
        family = self.family()
        for name, timestamp in sorted(runs.items()):
            family.add_metric([name], timestamp)
        yield family
