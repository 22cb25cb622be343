import re
import uuid

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme

from .error_responses import error_response, is_api_request, request_too_large
from .errors import DomainError
from .queueing import DEFERRED_NOTICE, deferred_tasks
from .request_context import current_request, current_request_id, current_tenant

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_FORMS = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})


class RequestIdMiddleware:
    """Takes X-Request-ID from a trusted proxy (or makes one) and echoes it back."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id
        tokens = (
            (current_request_id, current_request_id.set(request_id)),
            (current_request, current_request.set(request)),
            (current_tenant, current_tenant.set("")),
        )
        try:
            response = self.get_response(request)
        finally:
            for var, token in tokens:
                var.reset(token)
        response["X-Request-ID"] = request_id
        return response


def _has_nul(values) -> bool:
    return any("\x00" in key or any("\x00" in v for v in values.getlist(key)) for key in values)


class RequestInputGuardMiddleware:
    """Refuses, before any view or filter sees them, inputs no field can take.

    A NUL character in the query string is a 400: PostgreSQL cannot compare text holding one,
    and filters, paginators and views read query parameters without a form around them.
    (Form and JSON fields refuse NUL themselves, with a field error: Django's and DRF's
    CharField both carry ProhibitNullCharactersValidator.)

    A body over DATA_UPLOAD_MAX_MEMORY_SIZE is a 413. Django checks the limit only when
    `request.body` or `request.POST` is read, and DRF reads JSON from the stream, past it: the
    body is read here, within the limit."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if _has_nul(request.GET):
            return error_response(
                request,
                status=400,
                code="nul_character",
                title="Bad request",
                message="The query string holds a NUL character (%00), which no filter takes.",
            )
        if request.method in _BODY_METHODS:
            try:
                if request.content_type in _FORMS:
                    request.POST  # noqa: B018 - reading it is the check
                elif request.content_type == "application/json":
                    request.body  # noqa: B018
            except RequestDataTooBig:
                return request_too_large(request, limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return self.get_response(request)


class DeferredWorkMiddleware:
    """Tells the person when their change was saved but its follow-up could not be queued (the
    task broker is down): the periodic sweeps carry it out once the broker is back."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with deferred_tasks() as deferred:
            response = self.get_response(request)
        if deferred and not is_api_request(request) and hasattr(request, "_messages"):
            messages.warning(request, DEFERRED_NOTICE)
        return response


class DomainErrorMiddleware:
    """Pages' side of core.errors: a refusal raised by a service under a page becomes a
    message on the page the person came from (the API answers them itself, as JSON)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, DomainError) or is_api_request(request):
            return None
        messages.error(request, str(exception))
        if request.headers.get("HX-Request") == "true":
            # htmx swaps nothing on a refusal: reload the page, which shows the message.
            response = HttpResponse(status=204)
            response["HX-Refresh"] = "true"
            return response
        back = request.headers.get("Referer", "")
        if not url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            # Actions are sub-paths of their object (/fleet/nodes/7/action/): go to the object.
            back = request.path.rstrip("/").rsplit("/", 1)[0] + "/"
        return HttpResponseRedirect(back)
