"""Celery tasks of the tenants app: thin interfaces over the services, ids in."""

import logging

from celery import shared_task

from portal.fleet import PermanentFleetError, TransientFleetError
from portal.queueing import retry_policy

from .directory_sync import keycloak_directory_sync
from .enforcement import tenant_reconcile, tenants_reconcile_sweep
from .quota_requests import quota_grants_end_due, quota_grants_remind

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


@shared_task(acks_late=True)
def quota_grants_sweep_task() -> dict:
    """Periodic: remind tenants of temporary grants ending soon, end those past their date."""
    return {"reminded": quota_grants_remind(), "ended": quota_grants_end_due()}


class DirectorySyncFailed(Exception):
    """The directory could not be read; nothing changed (audited), the next run tries again."""


@shared_task(acks_late=True)
def keycloak_directory_sync_task() -> dict:
    """Periodic (beat): reconcile Keycloak-sourced users with Keycloak's directory."""
    result = keycloak_directory_sync()
    if not result.ok:
        # Raised so the task's failure shows in the worker metrics; beat runs it again later.
        raise DirectorySyncFailed(result.error)
    return {
        "configured": result.configured,
        "users": result.users,
        "deactivated": result.deactivated,
        "tokens_revoked": result.tokens_revoked,
    }
