"""The tenants tasks that services queue by name (portal.queueing sends them after commit)."""

from portal.queueing import enqueue_on_commit

RECONCILE_TENANT = "tenants.tasks.tenant_reconcile_task"


def enqueue_after_commit(task_name: str, *args: object) -> None:
    enqueue_on_commit(task_name, *args)
