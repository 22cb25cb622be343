"""Billing pages. Metering, rate cards and invoices are not built yet: the pages say so."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from tenants.access import access_for


@login_required
def tenant_billing(request):
    if not access_for(request.user).tenant_roles:
        raise PermissionDenied
    return render(request, "billing/tenant.html")


@login_required
def invoices(request):
    if not access_for(request.user).finance:
        raise PermissionDenied
    return render(request, "billing/invoices.html")


@login_required
def usage(request):
    if not access_for(request.user).finance:
        raise PermissionDenied
    return render(request, "billing/usage.html")
