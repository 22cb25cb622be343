"""Tenants' endpoints under /api/v1/."""

from django.urls import path

from portal.api.routers import PortalRouter

from .api import MeView, QuotaRequestViewSet, TenantViewSet

router = PortalRouter()
router.register("tenants", TenantViewSet, basename="tenant")
router.register("quota-requests", QuotaRequestViewSet, basename="quota-request")

urlpatterns = [
    path("me/", MeView.as_view(), name="me"),
    *router.urls,
]
