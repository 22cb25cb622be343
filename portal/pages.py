"""Pages composed from more than one app: the wiring's place, above every app.

The fleet overview and the capacity summary show the inventory's counts beside what tenants
were granted (tenants' quota): the inventory itself knows nothing of grants. The overview's GPU
sharing section puts how each model's GPUs are handed out (whole, MIG, HAMi) beside what each
tenant's workloads hold of every GPU class. Its utilization headline is billing's metering:
allocated against measured GPU-hours, the last 7 days and this month.
"""

from dataclasses import asdict

from django.conf import settings
from django.shortcuts import render
from django.utils import timezone

from billing.selectors.explorer import fleet_utilization_headline
from inventory.selectors.fleet import (
    fleet_capacity_by_model,
    fleet_gpu_counts_by_model,
    fleet_gpu_sharing_by_model,
    fleet_health_summary,
    fleet_nodes_by_state,
    fleet_totals,
    health_events_open,
    inventory_last_runs,
)
from inventory.views.access import any_role_required, platform_admin_required
from tenants.access import is_platform_admin
from tenants.quota.capacity import capacity_by_resource_class
from tenants.workloads.selectors import gpu_holdings_page, gpu_holdings_summary


@platform_admin_required
def fleet_overview(request):
    # One scan of the GPUs for the capacity, sharing, health and totals summaries.
    gpu_counts = fleet_gpu_counts_by_model()
    capacity = fleet_capacity_by_model(gpu_counts)
    runs = inventory_last_runs()
    return render(
        request,
        "inventory/fleet.html",
        {
            "capacity": capacity,
            "capacity_json": [asdict(row) for row in capacity],
            "states": fleet_nodes_by_state(),
            "totals": fleet_totals(gpu_counts),
            "health": fleet_health_summary(gpu_counts),
            "open_events": health_events_open(limit=8),
            "sync_run": runs["cluster-sync"],
            "ingest_run": runs["health-ingest"],
            "prometheus_configured": bool(settings.PROMETHEUS_URL),
            "resource_capacity": capacity_by_resource_class(),
            "sharing": fleet_gpu_sharing_by_model(gpu_counts),
            # Summed per GPU class, with the tenants over quota: a row per tenant (2,000 at
            # fleet scale) is the holdings page's, a page at a time.
            "holdings": gpu_holdings_summary(),
            # Billing's metering: the fleet's GPU utilization and idle GPU-hours (2 queries).
            "utilization_headline": fleet_utilization_headline(now=timezone.now()),
        },
    )


@platform_admin_required
def fleet_holdings(request):
    """What each tenant's workloads hold of every GPU class against its quota, 50 tenants a
    page; `?over=1`: only the tenants holding more than their quota of some class."""
    over_quota_only = request.GET.get("over") == "1"
    return render(
        request,
        "inventory/holdings.html",
        {
            "page": gpu_holdings_page(
                page=request.GET.get("page"), over_quota_only=over_quota_only
            ),
            "over_quota_only": over_quota_only,
            "query": "over=1&" if over_quota_only else "",
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
