"""The options of finance's filter pickers (tenant, cost center): `<option>`s for a datalist,
fetched as the person types, so that a fleet of thousands of tenants is picked from a short
list rather than sent whole with every page."""

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..selectors.tenant_filter import cost_center_options, tenant_options
from .access import finance_required


@require_GET
@finance_required
def filter_options(request, kind: str):
    if kind == "tenant":
        options = [(row["slug"], row["name"])
                   for row in tenant_options(text=request.GET.get("tenant", ""))]
    elif kind == "cost-center":
        options = [(center, "")
                   for center in cost_center_options(text=request.GET.get("cost_center", ""))]
    else:
        raise Http404
    return render(request, "billing/_picker_options.html", {"options": options})
