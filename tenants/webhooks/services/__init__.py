"""Writes about webhooks: the hooks themselves (`hooks`) and their outbox (`delivery`: emit an
event, send, retry, sweep, disable a hook that keeps failing)."""

from .delivery import (
    SEND_TASK,
    retry_delay,
    webhook_deliveries_sweep,
    webhook_delivery_send,
    webhook_event_emit,
)
from .hooks import (
    webhook_create,
    webhook_delete,
    webhook_delivery_redeliver,
    webhook_disable,
    webhook_enable,
    webhook_secret_reveal,
    webhook_test_send,
    webhook_update,
)

__all__ = [
    "SEND_TASK",
    "retry_delay",
    "webhook_create",
    "webhook_delete",
    "webhook_deliveries_sweep",
    "webhook_delivery_redeliver",
    "webhook_delivery_send",
    "webhook_disable",
    "webhook_enable",
    "webhook_event_emit",
    "webhook_secret_reveal",
    "webhook_test_send",
    "webhook_update",
]
