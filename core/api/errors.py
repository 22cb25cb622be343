"""One JSON error format for the whole API: never an HTML page, never a bare 500.

{"error": {"status": 400, "code": "invalid", "message": "...", "fields": {"name": ["..."]}}}
"""

import logging

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ..errors import DomainError

logger = logging.getLogger(__name__)


def error_body(*, status_code: int, code: str, message: str, fields: dict | None = None) -> dict:
    body = {"status": status_code, "code": code, "message": message}
    if fields:
        body["fields"] = fields
    return {"error": body}


def _flatten_message(detail) -> str:
    if isinstance(detail, list) and detail:
        return _flatten_message(detail[0])
    if isinstance(detail, dict) and detail:
        return _flatten_message(next(iter(detail.values())))
    return str(detail)


def exception_handler(exc, context):
    if isinstance(exc, DomainError):
        # The domain's refusals, mapped here once: a rule is 400, a lost race or a refused
        # state move 409; the message is written for the person who asked.
        return Response(
            error_body(status_code=exc.status, code=exc.code, message=str(exc)),
            status=exc.status,
        )
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        logger.exception("Unhandled API error", exc_info=exc)
        return Response(
            error_body(
                status_code=500,
                code="server_error",
                message="Something went wrong on our side. The error has been logged.",
            ),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        response.data = error_body(
            status_code=response.status_code,
            code="invalid",
            message="The request has invalid fields.",
            fields=detail,
        )
    else:
        if isinstance(exc, Http404):
            code, message = "not_found", "Not found."
        elif isinstance(exc, PermissionDenied):
            code, message = "permission_denied", "You do not have permission to do this."
        else:
            codes = exc.get_codes() if isinstance(exc, exceptions.APIException) else "error"
            code = codes if isinstance(codes, str) else "error"
            message = _flatten_message(response.data.get("detail", response.data))
        response.data = error_body(status_code=response.status_code, code=code, message=message)
    return response


def json_error_response(*, status_code: int, code: str, message: str) -> JsonResponse:
    return JsonResponse(
        error_body(status_code=status_code, code=code, message=message), status=status_code
    )
