"""Queue the inventory's Celery tasks after the current transaction commits.

Services name tasks by their registered name, so that services need not import the tasks
module (which imports the services): the registry resolves the name when the task is queued.
"""

from celery import signature
from django.db import transaction

SCHEDULABILITY = "inventory.tasks.node_schedulability_reconcile_task"
DRAIN = "inventory.tasks.node_drain_task"
RESERVATION = "inventory.tasks.node_reservation_reconcile_task"
NOTIFY_TENANTS = "inventory.tasks.node_tenants_notify_task"


def enqueue_on_commit(task_name: str, *args: object) -> None:
    """Queue `task_name(*args)` once the surrounding transaction has committed (never before)."""
    transaction.on_commit(lambda: signature(task_name, args=args).delay())
