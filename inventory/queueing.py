"""The inventory tasks that services queue by name (core.queueing sends them after commit)."""

from core.queueing import enqueue_on_commit, send_task

SCHEDULABILITY = "inventory.tasks.node_schedulability_reconcile_task"
DRAIN = "inventory.tasks.node_drain_task"
RESERVATION = "inventory.tasks.node_reservation_reconcile_task"
CLUSTER_SYNC = "inventory.tasks.cluster_sync_task"

__all__ = [
    "CLUSTER_SYNC", "DRAIN", "RESERVATION", "SCHEDULABILITY", "enqueue_on_commit", "send_task",
]
