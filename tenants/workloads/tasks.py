"""Celery tasks of workloads: thin interfaces over the services, ids in."""

from celery import shared_task

from core.fleet import PermanentFleetError, TransientFleetError
from core.queueing import retry_policy

from .services import (
    workload_observe,
    workload_reconcile,
    workloads_observe_sweep,
    workloads_observe_sweeps,
    workloads_reconcile_sweep,
)
from .services.idle import workloads_idle_sweep
from .services.notebook_culling import notebooks_cull_sweep


@shared_task(**retry_policy(TransientFleetError))
def workload_reconcile_task(workload_id: int) -> str:
    """Apply (or tear down) one workload and look at it; transient cluster errors are retried
    with backoff, a permanent one fails the workload with the API's message."""
    try:
        return workload_reconcile(workload_id=workload_id)
    except PermanentFleetError as exc:
        return f"refused: {exc}"


@shared_task(**retry_policy(TransientFleetError, max_retries=2))
def workload_observe_task(workload_id: int) -> str | None:
    return workload_observe(workload_id=workload_id)


@shared_task(acks_late=True)
def workloads_observe_sweep_task(cluster: str | None = None) -> int:
    """Observe every live workload on `cluster` (one list per owned kind); periodic without
    one: queues a sweep of each cluster in service."""
    if cluster is None:
        return workloads_observe_sweeps()
    return workloads_observe_sweep(cluster=cluster)


@shared_task(acks_late=True)
def workloads_reconcile_sweep_task(cluster: str | None = None) -> int:
    """Periodic: re-queue every workload whose desired state is not applied yet (on `cluster`
    only, when named: its recovery once it answers again)."""
    return len(workloads_reconcile_sweep(cluster=cluster))


@shared_task(acks_late=True)
def workloads_idle_sweep_task() -> str:
    """Periodic: measure every live GPU workload and apply its tenant's idle policy."""
    result = workloads_idle_sweep()
    return result.error or (f"{result.measured} measured, {result.idle} idle, "
                            f"{result.warned} warned, {result.acted} acted, {result.ended} ended")


@shared_task(acks_late=True)
def notebooks_cull_sweep_task() -> str:
    """Periodic: stop the notebooks nobody used over their tenant's hours."""
    result = notebooks_cull_sweep()
    return result.error or f"{result.judged} judged, {result.stopped} stopped"
