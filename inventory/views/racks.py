"""Racks: every rack by site, and one rack's elevation with the nodes in their units."""

from django.shortcuts import render

from ..models import NodeState
from ..selectors.nodes import rack_get_with_elevation, racks_for_site_overview
from .access import platform_admin_required


@platform_admin_required
def rack_list(request):
    sites: dict = {}
    for rack in racks_for_site_overview():
        sites.setdefault(rack.site, []).append(rack)
    return render(request, "inventory/racks.html", {"sites": sites})


@platform_admin_required
def rack_detail(request, rack_id: int):
    rack, slots = rack_get_with_elevation(rack_id=rack_id)
    nodes = [slot.node for slot in slots if slot.node]
    return render(
        request,
        "inventory/rack_detail.html",
        {"rack": rack, "slots": slots, "nodes": nodes,
         # A legend for the states drawn in this rack only, in lifecycle order.
         "legend": [(s.value, s.label, NodeState.color(s)) for s in NodeState
                    if s in {node.state for node in nodes}]},
    )
