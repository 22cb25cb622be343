"""Workload pages (what tenants run on the fleet)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from ..pages import redirect_to_current, tenant_page


@login_required
def workloads_home(request):
    return redirect_to_current(request, "tenants:workload-list")


@login_required
def workload_list(request, slug: str):
    _, context = tenant_page(request, slug, "workloads")
    return render(request, "tenants/workloads.html", context)
