"""Prometheus metrics the portal adds to django-prometheus's request metrics."""

from celery import signals
from prometheus_client import Counter

CELERY_TASKS = Counter(
    "portal_celery_task_outcomes_total",
    "Celery task outcomes seen by this process.",
    ["task", "outcome"],
)


def _name(sender) -> str:
    return getattr(sender, "name", None) or str(sender)


def _on_success(sender=None, **kwargs) -> None:
    CELERY_TASKS.labels(_name(sender), "success").inc()


def _on_failure(sender=None, **kwargs) -> None:
    CELERY_TASKS.labels(_name(sender), "failure").inc()


def _on_retry(sender=None, **kwargs) -> None:
    CELERY_TASKS.labels(_name(sender), "retry").inc()


def connect_celery_signals() -> None:
    signals.task_success.connect(_on_success, weak=False, dispatch_uid="portal_task_success")
    signals.task_failure.connect(_on_failure, weak=False, dispatch_uid="portal_task_failure")
    signals.task_retry.connect(_on_retry, weak=False, dispatch_uid="portal_task_retry")
