"""Celery tasks of tenant enforcement: thin interfaces over the services, ids in."""

import logging

from celery import shared_task

from core.fleet import PermanentFleetError, TransientFleetError
from core.queueing import retry_policy

from .services import tenant_reconcile, tenant_reconcile_everywhere, tenants_reconcile_sweep

logger = logging.getLogger(__name__)


@shared_task(**retry_policy(TransientFleetError))
def tenant_reconcile_task(tenant_id: int, force: bool = False, cluster: str | None = None) -> dict:
    """Apply the tenant's desired state on `cluster` (sent to that cluster's queue); transient
    cluster errors are retried with backoff. Without a cluster (a change to the tenant, queued
    by writers that do not know its clusters), queue one per cluster it is on or must leave.

    The error is recorded on the tenant's cluster and its requests before any retry; a
    permanent one waits for the periodic sweep (or a fix by an admin) instead of a tight retry
    loop.
    """
    if cluster is None:
        targets = tenant_reconcile_everywhere(tenant_ids=[tenant_id], force=force)
        return {"tenant": tenant_id, "clusters": [c for _, c in targets]}
    try:
        outcome = tenant_reconcile(tenant_id=tenant_id, cluster=cluster, force=force)
    except PermanentFleetError as exc:
        logger.warning("Tenant %s: cluster %s refused its objects: %s", tenant_id, cluster, exc)
        return {"tenant": tenant_id, "cluster": cluster, "error": str(exc)}
    return {
        "tenant": tenant_id,
        "cluster": cluster,
        "version": outcome.version,
        "applied": outcome.applied,
        "withdrawn": outcome.withdrawn,
        "drift": sorted(outcome.drift),
        "requests_applied": outcome.requests_applied,
    }


@shared_task(acks_late=True)
def tenants_reconcile_sweep_task(cluster: str | None = None) -> int:
    """Periodic: re-apply every tenant on each of its clusters (retries failures, repairs
    drift, removes it where it no longer belongs); on one cluster only when named (one that
    answers again)."""
    return len(tenants_reconcile_sweep(cluster=cluster))
