"""Celery tasks of tenant enforcement: thin interfaces over the services, ids in."""

import logging

from celery import shared_task

from core.fleet import PermanentFleetError, TransientFleetError
from core.queueing import retry_policy

from .services import tenant_reconcile, tenants_reconcile_sweep

logger = logging.getLogger(__name__)


@shared_task(**retry_policy(TransientFleetError))
def tenant_reconcile_task(tenant_id: int, force: bool = False) -> dict:
    """Apply the tenant's desired state; transient cluster errors are retried with backoff.

    The error is recorded on the tenant and its requests before any retry; a permanent one
    waits for the periodic sweep (or a fix by an admin) instead of a tight retry loop.
    """
    try:
        outcome = tenant_reconcile(tenant_id=tenant_id, force=force)
    except PermanentFleetError as exc:
        logger.warning("Tenant %s: the cluster refused its objects: %s", tenant_id, exc)
        return {"tenant": tenant_id, "error": str(exc)}
    return {
        "tenant": tenant_id,
        "version": outcome.version,
        "applied": outcome.applied,
        "drift": sorted(outcome.drift),
        "requests_applied": outcome.requests_applied,
    }


@shared_task(acks_late=True)
def tenants_reconcile_sweep_task() -> int:
    """Periodic: re-apply every tenant (retries failures, repairs drift)."""
    return len(tenants_reconcile_sweep())
