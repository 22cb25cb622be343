"""/api/v1/: the API's index, every list and endpoint under it by name (as DRF's DefaultRouter
root does for one router; the portal's routers are one per app)."""

from django.urls import NoReverseMatch, get_resolver, reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

NAMESPACE = "api"


def _endpoint_names() -> list[str]:
    """Names in the API's namespace whose URL takes no argument (lists and single endpoints),
    format-suffixed variants aside."""
    _, resolver = get_resolver().namespace_dict[NAMESPACE]
    return sorted(
        name for name in resolver.reverse_dict
        if isinstance(name, str) and name != "index"
    )


class ApiIndexView(APIView):
    """The API's index: each endpoint that takes no argument, by name, with its URL; the
    OpenAPI schema and its browsable documentation."""

    def get_view_name(self) -> str:
        return "API index"

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        examples=[OpenApiExample("Index", value={
            "endpoints": {"nodes": "https://portal.example.com/api/v1/nodes/",
                          "billing/invoices":
                          "https://portal.example.com/api/v1/billing/invoices/"},
            "schema": "https://portal.example.com/api/schema/",
            "docs": "https://portal.example.com/api/docs/",
        })],
    )
    def get(self, request: Request) -> Response:
        root = reverse(f"{NAMESPACE}:index")
        paths = []
        for name in _endpoint_names():
            try:
                paths.append(reverse(f"{NAMESPACE}:{name}"))
            except NoReverseMatch:  # takes an id, a slug…: reached from its list
                continue
        # Keyed by the path under /api/v1/ ("nodes", "billing/invoices"), as in the schema.
        endpoints = {
            path.removeprefix(root).strip("/"): request.build_absolute_uri(path)
            for path in sorted(paths)
        }
        return Response({
            "endpoints": endpoints,
            "schema": request.build_absolute_uri(reverse("api-schema")),
            "docs": request.build_absolute_uri(reverse("api-docs")),
        })
