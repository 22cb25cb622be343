"""Celery tasks of the inventory: thin interfaces that call one service each.

Ids in; each task reads the current state and brings the cluster (or the inventory) to it, so
running one twice, late, or after a crash is harmless. Only transient failures are retried.
"""

from celery import shared_task

from core.fleet import FleetError, TransientFleetError
from core.prometheus import PrometheusUnavailable
from core.queueing import retry_policy

from .services import cluster, health, reachability, sync


@shared_task(**retry_policy(TransientFleetError))
def node_schedulability_reconcile_task(node_id: int) -> bool | None:
    return cluster.node_schedulability_reconcile(node_id=node_id)


@shared_task(**retry_policy(TransientFleetError))
def node_reservation_reconcile_task(node_id: int) -> bool | None:
    return cluster.node_reservation_reconcile(node_id=node_id)


@shared_task(**retry_policy(TransientFleetError))
def node_drain_task(node_id: int, health_event_id: int | None = None) -> list[str] | None:
    # A PodDisruptionBudget refusing an eviction is a TransientFleetError (429): back off, retry.
    return cluster.node_drain_execute(node_id=node_id, health_event_id=health_event_id)


@shared_task(**retry_policy(TransientFleetError, max_retries=3))
def cluster_sync_task(cluster: str) -> int:
    """Read one cluster's nodes into the inventory. Returns the run's id."""
    return sync.cluster_sync(cluster=cluster).pk


@shared_task(acks_late=True)
def clusters_sync_sweep_task() -> int:
    """Periodic: a sync of every cluster in service, each in its own task (and queue), so a
    cluster that does not answer delays no other. Returns how many were queued."""
    return sync.clusters_sync_sweep()


@shared_task(acks_late=True)
def cluster_probe_task(cluster: str) -> str:
    """Ask one cluster whether it answers (recorded either way); never retried: the next probe
    comes soon. Returns its version, or why it did not answer."""
    try:
        return reachability.cluster_probe(cluster=cluster)
    except FleetError as exc:
        return f"no answer: {exc}"


@shared_task(acks_late=True)
def clusters_probe_sweep_task() -> int:
    """Periodic: probe each cluster in service that is reachable or due for another try, each
    on its own queue. Returns how many were queued."""
    return reachability.clusters_probe_sweep()


# Periodic and retried only a few times: the next scheduled run comes soon anyway.
@shared_task(**retry_policy(PrometheusUnavailable, max_retries=3))
def health_ingest_task() -> int | None:
    """Periodic: turn DCGM signals in Prometheus into health events. Returns the run's id."""
    run = health.health_ingest()
    health.inventory_runs_prune()
    return run.pk if run else None
