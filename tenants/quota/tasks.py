"""Celery tasks of quota: the periodic sweep of temporary grants."""

from celery import shared_task

from .services import quota_grants_end_due, quota_grants_remind


@shared_task(acks_late=True)
def quota_grants_sweep_task() -> dict:
    """Periodic: remind tenants of temporary grants ending soon, end those past their date."""
    return {"reminded": quota_grants_remind(), "ended": quota_grants_end_due()}
