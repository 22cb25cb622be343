"""Queue Celery tasks from services: after commit, by name, and robust to a broker that is down.

Services name tasks by their registered name, so that they need not import task modules (which
import the services): the registry resolves the name when the message is sent. The message is
sent only once the surrounding transaction has committed, never before the row it names exists.

A broker that is down must not turn a committed write into a 500: the failure is logged,
counted for the request (`deferred_tasks`, shown to the person as a warning) and left to the
periodic sweeps, which find the work from the database (level-triggered) and queue it again.
Every task here is idempotent, so a message that does arrive twice does no harm.

`RETRY` is the retry policy every task shares; its longest delay stays below the broker's
visibility timeout (see settings.BROKER_VISIBILITY_TIMEOUT).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from kombu.exceptions import KombuError, OperationalError

logger = logging.getLogger(__name__)

# Names of the tasks this request could not queue (None outside a request).
_deferred: ContextVar[list[str] | None] = ContextVar("portal_deferred_tasks", default=None)


def retry_policy(*errors: type[BaseException], max_retries: int = 8) -> dict[str, Any]:
    """Keyword arguments for `@shared_task`: late acks, retry `errors` with capped backoff."""
    return {
        "acks_late": True,
        "autoretry_for": errors,
        "retry_backoff": 5,
        "retry_backoff_max": settings.TASK_RETRY_BACKOFF_MAX,
        "retry_jitter": True,
        "max_retries": max_retries,
    }


def cluster_queue(cluster: str) -> str:
    """The Celery queue of one cluster's work: a cluster that is slow or does not answer fills
    only its own queue, and workers may serve any set of clusters (docs/clusters.md)."""
    return f"{settings.CELERY_CLUSTER_QUEUE_PREFIX}{cluster}"


# The worker remote-control command (portal/celery.py) that makes workers serve the queues of
# clusters added since they started.
SERVE_CLUSTERS = "serve_clusters"


def workers_serve_clusters() -> None:
    """Ask every worker to serve the queues of the clusters it should and does not yet (those
    added since it started); nothing in eager mode. A broker that is down: logged, left to the
    next time."""
    if current_app.conf.task_always_eager:
        return
    try:
        current_app.control.broadcast(SERVE_CLUSTERS, reply=False)
    except (OperationalError, KombuError, OSError) as exc:
        logger.warning("Could not ask the workers to serve new clusters' queues: %s", exc)


def send_task(task_name: str, *args: Any, cluster: str | None = None) -> bool:
    """Send `task_name(*args)` now, to `cluster`'s own queue when it names one; False (logged,
    counted) when the broker cannot be reached."""
    options = {"queue": cluster_queue(cluster)} if cluster else {}
    try:
        current_app.signature(task_name, args=args).apply_async(**options)
    except (OperationalError, KombuError, OSError) as exc:
        logger.warning("Could not queue %s%r: %s; the periodic sweep will", task_name, args, exc)
        deferred = _deferred.get()
        if deferred is not None:
            deferred.append(task_name)
        return False
    return True


def enqueue_on_commit(task_name: str, *args: Any, cluster: str | None = None) -> None:
    """Queue `task_name(*args)` (to `cluster`'s queue, when named) once the surrounding
    transaction commits.

    `robust`: whatever goes wrong sending it (in eager mode, running it) is logged and does not
    undo or fail the write that already committed.
    """
    transaction.on_commit(lambda: send_task(task_name, *args, cluster=cluster), robust=True)


# What a person (a page's message) or a client (the API's `notice`) is told when their write
# was saved but its follow-up could not be queued.
DEFERRED_NOTICE = (
    "Saved. The task queue is unreachable right now, so what follows from this change (the "
    "cluster, notifications) waits; it is carried out automatically once the queue is back."
)


def tasks_deferred_now() -> list[str]:
    """Names of the tasks the current request could not queue so far (empty outside one)."""
    return list(_deferred.get() or ())


@contextmanager
def deferred_tasks() -> Iterator[list[str]]:
    """Collect the names of tasks that could not be queued inside the block (one request)."""
    collected: list[str] = []
    token = _deferred.set(collected)
    try:
        yield collected
    finally:
        _deferred.reset(token)
