"""Celery tasks of model credentials: thin interfaces over the services, ids in."""

import logging

from celery import shared_task

from core.fleet import PermanentFleetError, TransientFleetError
from core.queueing import retry_policy

from .services import (
    credentials_reconcile,
    credentials_reconcile_everywhere,
    credentials_reconcile_sweep,
)

logger = logging.getLogger(__name__)


@shared_task(**retry_policy(TransientFleetError))
def credentials_reconcile_task(tenant_id: int, cluster: str | None = None) -> dict:
    """Sync the tenant's credentials as Secrets on `cluster` (sent to its queue); transient
    cluster errors are retried. Without a cluster (a change to the credentials), queue one per
    cluster the tenant is on. The errors it sees were scrubbed of the secret values by the
    service."""
    if cluster is None:
        targets = credentials_reconcile_everywhere(tenant_ids=[tenant_id])
        return {"tenant": tenant_id, "clusters": [c for _, c in targets]}
    try:
        outcome = credentials_reconcile(tenant_id=tenant_id, cluster=cluster)
    except PermanentFleetError as exc:
        logger.warning("Tenant %s: the cluster refused a credential's objects: %s", tenant_id, exc)
        return {"tenant": tenant_id, "error": str(exc)}
    return {"tenant": tenant_id, "applied": outcome.applied, "pruned": outcome.pruned}


@shared_task(acks_late=True)
def credentials_reconcile_sweep_task() -> int:
    """Periodic: re-sync every tenant's credentials (retries, prunes, repairs drift)."""
    return len(credentials_reconcile_sweep())
