"""Celery tasks of webhooks: thin interfaces over the outbox's services, ids in."""

from celery import shared_task

from .services.delivery import webhook_deliveries_sweep, webhook_delivery_send


@shared_task(acks_late=True)
def webhook_delivery_send_task(delivery_id: int) -> str | None:
    """Send one delivery if it is due; a failure is recorded on it and the sweep retries it."""
    return webhook_delivery_send(delivery_id=delivery_id)


@shared_task(acks_late=True)
def webhook_deliveries_sweep_task() -> int:
    """Periodic (and at worker start): queue every delivery that is due."""
    return webhook_deliveries_sweep()
