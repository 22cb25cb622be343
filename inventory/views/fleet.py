"""The fleet overview, the capacity summary, and the "run it now" buttons of the periodic jobs."""

import logging
from dataclasses import asdict

from celery.exceptions import Retry
from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from portal import queueing
from portal.fleet import FleetError
from tenants.access import is_platform_admin
from tenants.quota.capacity import capacity_by_resource_class

from ..prometheus import PrometheusError
from ..selectors.fleet import (
    fleet_capacity_by_model,
    fleet_health_summary,
    fleet_nodes_by_state,
    fleet_totals,
    health_events_open,
    inventory_last_runs,
)
from ..tasks import cluster_sync_task, health_ingest_task
from .access import any_role_required, platform_admin_required

logger = logging.getLogger(__name__)


@platform_admin_required
def fleet_overview(request):
    capacity = fleet_capacity_by_model()
    runs = inventory_last_runs()
    return render(
        request,
        "inventory/fleet.html",
        {
            "capacity": capacity,
            "capacity_json": [asdict(row) for row in capacity],
            "states": fleet_nodes_by_state(),
            "totals": fleet_totals(),
            "health": fleet_health_summary(),
            "open_events": health_events_open(limit=8),
            "sync_run": runs["cluster-sync"],
            "ingest_run": runs["health-ingest"],
            "prometheus_configured": bool(settings.PROMETHEUS_URL),
            "resource_capacity": capacity_by_resource_class(),
        },
    )


@any_role_required
def capacity_summary(request):
    """What the fleet has per resource class; tenants see these totals, never node details."""
    return render(
        request,
        "inventory/capacity.html",
        {"rows": capacity_by_resource_class(), "is_admin": is_platform_admin(request.user)},
    )


def _run_now(request, task, what: str) -> None:
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        if queueing.send_task(task.name):
            messages.success(request, f"{what} queued.")
        else:
            messages.error(
                request,
                f"{what} could not be queued: the task queue is unreachable. It runs on its own "
                "schedule once the queue is back.",
            )
        return
    try:
        result = task.delay()
    except (FleetError, PrometheusError, Retry) as exc:
        # Eager (demo) mode runs the job here: its failure is recorded on the run, not a 500.
        logger.warning("%s failed: %s", what, exc)
        messages.error(request, f"{what} failed: {exc}. It is recorded below and retried.")
        return
    if result.failed():
        messages.error(request, f"{what} failed: {result.result}.")
    else:
        messages.success(request, f"{what} done.")


@require_POST
@platform_admin_required
def sync_now(request):
    _run_now(request, cluster_sync_task, "Cluster sync")
    return redirect("inventory:fleet")


@require_POST
@platform_admin_required
def ingest_now(request):
    if not settings.PROMETHEUS_URL:
        messages.warning(request, "PROMETHEUS_URL is not set: there is nothing to ingest from.")
        return redirect("inventory:fleet")
    _run_now(request, health_ingest_task, "Health ingestion")
    return redirect("inventory:fleet")
