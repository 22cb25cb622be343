"""The portal's URLs plus a page and an API view that raise, to see the 500 answers."""

from django.urls import path
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import AllowAny

from portal.urls import handler400, handler403, handler404, handler500, urlpatterns


def page_that_raises(request):
    raise RuntimeError("boom (a page)")


@api_view(["GET"])
@permission_classes([AllowAny])
def api_view_that_raises(request):
    raise RuntimeError("boom (an API view)")


def plain_view_under_api_that_raises(request):
    raise RuntimeError("boom (a plain Django view under /api/)")


urlpatterns = [
    path("boom/", page_that_raises),
    path("api/v1/boom/", api_view_that_raises),
    path("api/v1/plain-boom/", plain_view_under_api_that_raises),
    *urlpatterns,
]

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
