"""Pages composed from more than one app: the wiring's place, above every app.

The fleet overview and the capacity summary show the inventory's counts beside what tenants
were granted (tenants' quota): the inventory itself knows nothing of grants. The overview's GPU
sharing section puts how each model's GPUs are handed out (whole, MIG, HAMi) beside what each
tenant's workloads hold of every GPU class. Its utilization headline is billing's metering:
allocated against measured GPU-hours, the last 7 days and this month.
"""

from dataclasses import asdict
from datetime import UTC

from django.conf import settings
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone

from billing.selectors.explorer import fleet_utilization_headline
from core.stamps import read_stamps, stamped
from inventory.selectors.clusters import cluster_counts, fleet_by_site
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
from tenants.quota.cohorts import cohort_capacity
from tenants.workloads.selectors import gpu_holdings_page, gpu_holdings_summary

# What each part of the overview reads: it is cached under these tables' versions (core.stamps),
# so between two writes to them every worker reads it from its cache.
INVENTORY_TABLES = ("inventory_site", "inventory_rack", "inventory_node", "inventory_gpu",
                    "inventory_healthevent", "inventory_inventoryrun")
# In use is what the workloads hold: the capacity part is drawn from them too.
CAPACITY_TABLES = (
    "inventory_node", "inventory_gpu", "tenants_quota", "tenants_tenant", "tenants_workload",
)
# Each cluster's counts (nodes by state, open events, GPU capacity); the clusters themselves
# (their reachability above all) are read on every view.
CLUSTER_TABLES = ("inventory_node", "inventory_gpu", "inventory_healthevent")
HOLDINGS_TABLES = ("tenants_workload", "tenants_quota", "tenants_tenant")
COHORT_TABLES = ("tenants_quota", "tenants_tenant")
UTILIZATION_TABLES = ("billing_usagerecord", "billing_usagedaily", "billing_meteringwindow")


def _fleet_inventory() -> dict:
    """The inventory's part: capacity, sharing, states, totals, health, open events, job runs."""
    # One scan of the GPUs for the capacity, sharing, health and totals summaries.
    gpu_counts = fleet_gpu_counts_by_model()
    capacity = fleet_capacity_by_model(gpu_counts)
    runs = inventory_last_runs()
    return {
        "capacity": capacity,
        "capacity_json": [asdict(row) for row in capacity],
        "states": fleet_nodes_by_state(),
        "totals": fleet_totals(gpu_counts),
        "health": fleet_health_summary(gpu_counts),
        "open_events": list(health_events_open(limit=8)),
        "sync_run": runs["cluster-sync"],
        "ingest_run": runs["health-ingest"],
        "sharing": fleet_gpu_sharing_by_model(gpu_counts),
    }


def _with_parts(data: dict, *partials: str) -> dict:
    """`data` and, under "parts", the overview's partials drawn from it (rendered HTML)."""
    return {
        **data,
        "parts": {
            name.replace("-", "_"): render_to_string(f"inventory/fleet.html#{name}", data)
            for name in partials
        },
    }


def _stamped_part(name, tables, compute, *partials, stamps, extra=None) -> dict:
    """A part of the overview, its data and its partials' HTML, computed and rendered once per
    version of the tables it is drawn from (see core.stamps)."""
    return stamped(
        f"fleet-overview:{name}", tables, lambda: _with_parts(compute(), *partials),
        stamps=stamps, extra=extra,
    )


@platform_admin_required
def fleet_overview(request):
    stamps = read_stamps()
    now = timezone.now()
    inventory = _stamped_part(
        "inventory", INVENTORY_TABLES, _fleet_inventory, "stats", "chart-and-states", "sharing",
        stamps=stamps,
    )
    capacity = _stamped_part(
        "capacity", CAPACITY_TABLES,
        lambda: {"resource_capacity": capacity_by_resource_class()}, "capacity-by-class",
        stamps=stamps,
    )
    # Kueue's cohorts: what shared tenants lend each other (as each last reconcile read it).
    cohorts = _stamped_part(
        "cohorts", COHORT_TABLES, lambda: {"cohorts": cohort_capacity()}, "cohorts",
        stamps=stamps,
    )
    # Summed per GPU class, with the tenants over quota: a row per tenant (2,000 at fleet
    # scale) is the holdings page's, a page at a time.
    holdings = _stamped_part(
        "holdings", HOLDINGS_TABLES, lambda: {"holdings": gpu_holdings_summary()}, "holdings",
        stamps=stamps,
    )
    # Billing's metering: the fleet's GPU utilization and idle GPU-hours. Its periods end with
    # today, so the day is part of the key.
    utilization = _stamped_part(
        "utilization", UTILIZATION_TABLES,
        lambda: {"utilization_headline": fleet_utilization_headline(now=now)}, "utilization",
        stamps=stamps, extra=now.astimezone(UTC).date(),
    )
    by_cluster = stamped("fleet-overview:clusters", CLUSTER_TABLES, cluster_counts,
                         stamps=stamps)
    parts = {}
    context = {"prometheus_configured": bool(settings.PROMETHEUS_URL), "parts": parts,
               "sites": fleet_by_site(by_cluster)}
    for part in (inventory, capacity, cohorts, holdings, utilization):
        context.update(part)
        parts.update(part["parts"])
    context["parts"] = parts
    return render(request, "inventory/fleet.html", context)


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
