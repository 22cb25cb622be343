"""The composed landing pages and the error handlers (the wiring layer)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.defaults import page_not_found

from tenants.access import access_for

from .api.errors import json_error_response


@login_required
def home(request):
    """Send each user to the landing page of their main role."""
    access = access_for(request.user)
    if access.tenant_roles:
        return redirect("tenants:home")
    if access.platform_admin:
        return redirect("inventory:fleet")
    if access.finance:
        return redirect("billing:invoices")
    return redirect("no-access")


@login_required
def no_access(request):
    if access_for(request.user).has_any_access:
        return redirect("home")
    return render(request, "portal/no_access.html")


def handler404(request, exception=None):
    if request.path.startswith("/api/"):
        return json_error_response(status_code=404, code="not_found", message="Not found.")
    return page_not_found(request, exception)


def handler500(request):
    if request.path.startswith("/api/"):
        return json_error_response(
            status_code=500,
            code="server_error",
            message="Something went wrong on our side. The error has been logged.",
        )
    from django.views.defaults import server_error

    return server_error(request)
