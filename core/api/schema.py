"""What the OpenAPI schema says about errors: the one error format, on every operation.

Added once, after drf-spectacular has built the schema, so that no viewset has to list its
401/403/404/409 answers; an operation that documents a status itself keeps its own, and one
that documents an error status by its description alone (a 503) gets the error format there.
"""

from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from .tags import tag_descriptions

ERROR_SCHEMA = {
    "type": "object",
    "description": "The API's one error format.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "status": {"type": "integer", "description": "The HTTP status, again."},
                "code": {"type": "string", "description": "Stable, for programs: not_found, …"},
                "message": {"type": "string", "description": "For people."},
                "fields": {
                    "type": "object",
                    "additionalProperties": True,
                    "description": "Per field (or `non_field_errors`): what is wrong with it.",
                },
            },
            "required": ["status", "code", "message"],
        }
    },
    "required": ["error"],
}

ERROR_REF = {"$ref": "#/components/schemas/Error"}

ALWAYS = {
    "400": "Bad input: a field, a filter or the query string (e.g. a NUL character).",
    "401": "No credentials, or credentials the portal does not accept.",
    "403": "Your role does not allow this.",
    "404": "No such object (or another tenant's), or no such page of a list.",
    "429": "Too many requests: slow down (see Retry-After).",
}
UNSAFE = {
    "409": "The object is in a state that does not allow this (someone may have moved it).",
}
WITH_BODY = {
    "413": "The request body is larger than the portal accepts.",
    "415": "The body is not JSON (or a form).",
}


def document_error_responses(result, generator, request, public):
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    error = {"application/json": {"schema": ERROR_REF}}
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            statuses = dict(ALWAYS)
            if method != "get":
                statuses |= UNSAFE
            if "requestBody" in operation or method in ("post", "put", "patch"):
                statuses |= WITH_BODY
            responses = operation.setdefault("responses", {})
            # An error an operation names with only a description (a 503 of its own, or its
            # words for a 400) is answered in the error format too.
            for status, response in responses.items():
                if status[:1] in ("4", "5") and "content" not in response:
                    statuses.setdefault(status, response.get("description", ""))
            for status, description in statuses.items():
                own = responses.get(status, {}).get("content", {}).get("application/json")
                if own is None:
                    description = responses.get(status, {}).get("description") or description
                    responses[status] = {"description": description, "content": error}
                elif own["schema"] != ERROR_REF:
                    # Its own answer (e.g. an import's row errors), or the error format for a
                    # request that never got that far.
                    own["schema"] = {"oneOf": [own["schema"], ERROR_REF]}
    return result


def describe_tags(result, generator, request, public):
    """The tags' descriptions, in core.api.tags' order."""
    result["tags"] = tag_descriptions()
    return result


class SchemaView(SpectacularAPIView):
    """The OpenAPI document; its errors (a throttled caller's 429) are the API's JSON errors,
    not an OpenAPI-typed body."""

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response
