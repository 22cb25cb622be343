from dataclasses import asdict

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from tenants.access import is_platform_admin

from .selectors import fleet_capacity_by_model, fleet_nodes_by_state, fleet_totals


@login_required
def fleet_overview(request):
    if not is_platform_admin(request.user):
        raise PermissionDenied
    capacity = fleet_capacity_by_model()
    return render(
        request,
        "inventory/fleet.html",
        {
            "capacity": capacity,
            "capacity_json": [asdict(row) for row in capacity],
            "states": fleet_nodes_by_state(),
            "totals": fleet_totals(),
        },
    )
