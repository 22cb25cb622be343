"""Prometheus metrics the portal adds to django-prometheus's request metrics.

Under gunicorn each worker counts its own requests; with PROMETHEUS_MULTIPROC_DIR set (see
portal/gunicorn_conf.py) every worker writes its counts to files there and a scrape sums them
(`scrape_registry`). What is read at scrape time (task outcomes, queue lengths, beat, metering)
is registered with `register_collector`, so it is exported in both modes.

Celery task outcomes are counted where the task runs: in a worker process, not the web
process that serves /metrics. With a Redis broker the workers add their counts to one hash in
Redis and /metrics reads it, so the web process reports what every worker did. In eager mode
(the demo, no broker) tasks run in-process and are counted in memory.
"""

import logging
import threading
from collections import Counter

from celery import signals
from django.conf import settings
from prometheus_client import REGISTRY, CollectorRegistry, multiprocess
from prometheus_client.core import CounterMetricFamily

logger = logging.getLogger(__name__)

REDIS_KEY = "portal:metrics:celery_task_outcomes"
_local: Counter = Counter()
_lock = threading.Lock()
_clients: dict = {}


def broker_redis():
    """The broker's Redis when tasks run in workers; None in eager mode or with another broker."""
    url = settings.CELERY_BROKER_URL
    if settings.CELERY_TASK_ALWAYS_EAGER or not url.startswith(("redis://", "rediss://")):
        return None
    if url not in _clients:
        import redis

        _clients[url] = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
    return _clients[url]


def record_task_outcome(task: str, outcome: str) -> None:
    client = broker_redis()
    if client is None:
        with _lock:
            _local[(task, outcome)] += 1
        return
    try:
        client.hincrby(REDIS_KEY, f"{task}\t{outcome}", 1)
    except Exception:  # a metric must never fail a task
        logger.warning("Could not record a Celery task outcome in Redis", exc_info=True)


def task_outcomes() -> dict[tuple[str, str], int]:
    client = broker_redis()
    if client is None:
        with _lock:
            return dict(_local)
    try:
        raw = client.hgetall(REDIS_KEY)
    except Exception:  # /metrics still answers with the request metrics
        logger.warning("Could not read Celery task outcomes from Redis", exc_info=True)
        return {}
    outcomes = {}
    for field, count in raw.items():
        task, _, outcome = field.decode().partition("\t")
        outcomes[(task, outcome)] = int(count)
    return outcomes


class TaskOutcomeCollector:
    """`portal_celery_task_outcomes_total{task, outcome}`: success, failure, retry."""

    def family(self) -> CounterMetricFamily:
        return CounterMetricFamily(
            "portal_celery_task_outcomes",
            "Celery task outcomes (success, failure, retry) by task.",
            labels=["task", "outcome"],
        )

    def describe(self):  # registering reads nothing
        yield self.family()

    def collect(self):
        family = self.family()
        for (task, outcome), count in sorted(task_outcomes().items()):
            family.add_metric([task, outcome], count)
        yield family


def _name(sender) -> str:
    return getattr(sender, "name", None) or str(sender)


def _on_success(sender=None, **kwargs) -> None:
    record_task_outcome(_name(sender), "success")


def _on_failure(sender=None, **kwargs) -> None:
    record_task_outcome(_name(sender), "failure")


def _on_retry(sender=None, **kwargs) -> None:
    record_task_outcome(_name(sender), "retry")


# Collectors read at scrape time, by class: each is registered once per process.
_scrape_collectors: dict[type, object] = {}


def register_collector(collector) -> None:
    """Export `collector` (read at scrape time) from /metrics, in either mode."""
    if type(collector) in _scrape_collectors:
        return
    _scrape_collectors[type(collector)] = collector
    REGISTRY.register(collector)


def multiprocess_mode() -> bool:
    return bool(settings.PROMETHEUS_MULTIPROC_DIR)


def scrape_registry() -> CollectorRegistry:
    """What /metrics exports: in multiprocess mode, every live and dead worker's counts summed
    from the files plus the collectors read at scrape time; else this process's registry."""
    if not multiprocess_mode():
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    for collector in _scrape_collectors.values():
        registry.register(collector)
    return registry


def connect_celery_signals() -> None:
    signals.task_success.connect(_on_success, weak=False, dispatch_uid="portal_task_success")
    signals.task_failure.connect(_on_failure, weak=False, dispatch_uid="portal_task_failure")
    signals.task_retry.connect(_on_retry, weak=False, dispatch_uid="portal_task_retry")
    register_collector(TaskOutcomeCollector())
