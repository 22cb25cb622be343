"""A platform admin asks for one of the fleet's periodic jobs now (the fleet page's buttons).

With workers, the job is queued (and says so when the broker is unreachable: it runs on its
own schedule once the queue is back); in eager mode (the demo) it runs here, and its failure is
what it recorded on its run, never a 500. Each request is audited.
"""

from dataclasses import dataclass
from typing import Any

from celery import current_app
from celery.exceptions import Retry
from django.conf import settings

from core import queueing
from core.audit import audit
from core.fleet import FleetError
from core.prometheus import PrometheusError

JOBS = {
    "cluster-sync": ("inventory.tasks.clusters_sync_sweep_task", "Cluster sync"),
    "health-ingest": ("inventory.tasks.health_ingest_task", "Health ingestion"),
}


@dataclass(frozen=True)
class JobRequest:
    ok: bool
    message: str


def inventory_job_run_now(*, job: str, actor: Any | None) -> JobRequest:
    task_name, what = JOBS[job]
    audit(actor=actor, action="inventory.job_run_now", changes={"job": job})
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        if queueing.send_task(task_name):
            return JobRequest(True, f"{what} queued.")
        return JobRequest(
            False,
            f"{what} could not be queued: the task queue is unreachable. It runs on its own "
            "schedule once the queue is back.",
        )
    try:
        result = current_app.tasks[task_name].delay()
    except (FleetError, PrometheusError, Retry) as exc:
        return JobRequest(False, f"{what} failed: {exc}. It is recorded below and retried.")
    if result.failed():
        return JobRequest(False, f"{what} failed: {result.result}.")
    return JobRequest(True, f"{what} done.")
