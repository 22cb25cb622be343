"""The inventory tasks that services queue by name (core.queueing sends them after commit)."""

from core.queueing import enqueue_on_commit

SCHEDULABILITY = "inventory.tasks.node_schedulability_reconcile_task"
DRAIN = "inventory.tasks.node_drain_task"
RESERVATION = "inventory.tasks.node_reservation_reconcile_task"

__all__ = ["DRAIN", "RESERVATION", "SCHEDULABILITY", "enqueue_on_commit"]
