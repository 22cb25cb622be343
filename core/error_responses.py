"""Error answers outside a view: the API's JSON error for /api/ paths, the portal's page elsewhere.

Used by middleware and the error handlers, which run where no view chose a format.
"""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .api.errors import json_error_response


def is_api_request(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def error_response(
    request: HttpRequest, *, status: int, code: str, title: str, message: str
) -> HttpResponse:
    if is_api_request(request):
        return json_error_response(status_code=status, code=code, message=message)
    context = {"code": status, "title": title, "detail": message}
    return render(request, "portal/error.html", context, status=status)


def request_too_large(request: HttpRequest, *, limit: int) -> HttpResponse:
    return error_response(
        request,
        status=413,
        code="request_too_large",
        title="Too much data",
        message=f"The request is larger than the portal accepts ({limit / 2**20:.0f} MiB).",
    )
