"""The "run it now" buttons of the fleet's periodic jobs (the fleet overview itself is composed
with the tenants' grants in portal.pages)."""

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ..services.jobs import inventory_job_run_now
from .access import platform_admin_required


def _run_now(request, job: str) -> None:
    outcome = inventory_job_run_now(job=job, actor=request.user)
    (messages.success if outcome.ok else messages.error)(request, outcome.message)


@require_POST
@platform_admin_required
def sync_now(request):
    _run_now(request, "cluster-sync")
    return redirect("inventory:fleet")


@require_POST
@platform_admin_required
def ingest_now(request):
    if not settings.PROMETHEUS_URL:
        messages.warning(request, "PROMETHEUS_URL is not set: there is nothing to ingest from.")
        return redirect("inventory:fleet")
    _run_now(request, "health-ingest")
    return redirect("inventory:fleet")
