"""The composed landing pages and the error handlers (the wiring layer)."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseServerError, JsonResponse
from django.shortcuts import redirect, render
from django.template import loader
from django.templatetags.static import static
from django.urls import Resolver404, resolve, reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from django.views.defaults import page_not_found, permission_denied, server_error

from core.api.errors import json_error_response
from tenants.access import access_for


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


def favicon(request):
    """/favicon.ico, which browsers ask for where a page names none (a JSON answer, a file)."""
    return redirect(static("favicon.svg"))


@require_GET
def cli_discovery(request):
    """/.well-known/portalctl.json: where portalctl signs in for this portal (the issuer and
    the public client), so that `portalctl login --server URL` needs nothing else. Public, as
    the issuer's own discovery document is; an empty issuer means tokens only."""
    return JsonResponse({
        "issuer": settings.OIDC_ISSUER_URL,
        "client_id": settings.OIDC_CLI_CLIENT_ID if settings.OIDC_ISSUER_URL else "",
        "api": request.build_absolute_uri(reverse("api:index")),
    })


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def _error_page(request, *, status: int, title: str, detail: str):
    context = {"code": status, "title": title, "detail": detail}
    return render(request, "portal/error.html", context, status=status)


def handler400(request, exception=None):
    if _is_api(request):
        return json_error_response(status_code=400, code="bad_request", message="Bad request.")
    return _error_page(
        request,
        status=400,
        title="Bad request",
        detail="The portal could not understand this request. Go back and try again.",
    )


def handler403(request, exception=None):
    if _is_api(request):
        return json_error_response(
            status_code=403,
            code="permission_denied",
            message="You do not have permission to do this.",
        )
    return permission_denied(request, exception)


def handler404(request, exception=None):
    if _is_api(request):
        return json_error_response(status_code=404, code="not_found", message="Not found.")
    return page_not_found(request, exception)


def handler500(request):
    if _is_api(request):
        return json_error_response(
            status_code=500,
            code="server_error",
            message="Something went wrong on our side. The error has been logged.",
        )
    # No context processors: the database may be what failed. The request id lets support
    # find the logged error.
    try:
        page = loader.get_template("500.html").render(
            {"request_id": getattr(request, "request_id", "")}
        )
    except Exception:  # the error page must not fail in turn
        return server_error(request)
    return HttpResponseServerError(page)


def csrf_failure(request, reason: str = ""):
    """A form posted without a valid CSRF token (usually an old tab): the portal's 403 page."""
    if _is_api(request):
        return json_error_response(
            status_code=403, code="csrf_failed", message=f"CSRF check failed: {reason}"
        )
    return _error_page(
        request,
        status=403,
        title="This form has expired",
        detail="Reload the page and submit it again.",
    )


@csrf_exempt
def api_not_found(request, path: str = ""):
    """Unknown URLs under /api/ answer the API's JSON 404, even with DEBUG on (the demo).

    CSRF-exempt: nothing is here to protect, and a POST to a wrong URL is told it is wrong,
    not that its (absent) CSRF token failed."""
    if (
        settings.APPEND_SLASH
        and request.method in ("GET", "HEAD")
        and not request.path.endswith("/")
        and _resolves_to_an_api_view(request.path + "/")
    ):
        return redirect(request.get_full_path(force_append_slash=True), permanent=True)
    return json_error_response(status_code=404, code="not_found", message="Not found.")


def _resolves_to_an_api_view(path: str) -> bool:
    try:
        return resolve(path).func is not api_not_found
    except Resolver404:
        return False
