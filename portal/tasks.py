"""Housekeeping tasks of the portal's infrastructure."""

from celery import shared_task
from django.contrib.sessions.models import Session
from django.utils import timezone


@shared_task(acks_late=True)
def clear_expired_sessions() -> int:
    """Delete expired sessions; safe to run twice or late. Returns how many went."""
    deleted, _ = Session.objects.filter(expire_date__lt=timezone.now()).delete()
    return deleted
