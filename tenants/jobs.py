"""Queue a tenants task by name once the current transaction commits.

Services queue follow-up work (reconcile a tenant, send a decision's mail) here instead of
importing the task modules, which import the services: the layers stay one-way. Callbacks are
`robust`: a broker hiccup after the commit is logged and the periodic sweep picks the work up.
Queuing the same reconcile twice is harmless: it is idempotent.
"""

from typing import Any

from celery import current_app
from django.db import transaction

RECONCILE_TENANT = "tenants.tasks.tenant_reconcile_task"
NOTIFY_QUOTA_REQUEST = "tenants.tasks.quota_request_notify_task"


def enqueue_after_commit(task_name: str, *args: Any) -> None:
    def send() -> None:
        current_app.signature(task_name, args=args).delay()

    transaction.on_commit(send, robust=True)
