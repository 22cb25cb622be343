"""Housekeeping tasks of the portal's infrastructure.

They keep the names they had when this code lived in portal/ (`portal.tasks.…`): messages
already queued, and beat's stored schedule, name them so.
"""

from celery import shared_task
from django.contrib.sessions.models import Session
from django.utils import timezone

from . import outbox


@shared_task(name="portal.tasks.clear_expired_sessions", acks_late=True)
def clear_expired_sessions() -> int:
    """Delete expired sessions; safe to run twice or late. Returns how many went."""
    deleted, _ = Session.objects.filter(expire_date__lt=timezone.now()).delete()
    return deleted


@shared_task(name="portal.tasks.outbox_send_task", acks_late=True)
def outbox_send_task(email_id: int) -> bool:
    """Send one e-mail of the outbox; a refusal is recorded on it and the sweep tries again."""
    return outbox.outbox_send(email_id=email_id)


@shared_task(name="portal.tasks.outbox_sweep_task", acks_late=True)
def outbox_sweep_task() -> int:
    """Periodic (and at worker start): send every e-mail of the outbox that is due."""
    return outbox.outbox_sweep()
