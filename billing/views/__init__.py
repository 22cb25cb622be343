"""Billing pages: the tenant's page and the usage explorer (placeholders until built here);
finance's invoice pages are in `billing.views.finance`."""

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
def usage(request):
    if not access_for(request.user).finance:
        raise PermissionDenied
    return render(request, "billing/usage.html")
