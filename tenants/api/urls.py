"""Tenants' endpoints under /api/v1/."""

from django.urls import path

from core.api.routers import PortalRouter

from ..credentials.api import ModelCredentialViewSet
from ..dashboard.api import MeView, TenantViewSet
from ..quota.api import CapacityView, QuotaRequestViewSet
from ..workloads.api import WorkloadViewSet

router = PortalRouter()
router.register("tenants", TenantViewSet, basename="tenant")
router.register("quota-requests", QuotaRequestViewSet, basename="quota-request")
router.register("workloads", WorkloadViewSet, basename="workload")
router.register(r"tenants/(?P<tenant_slug>[a-z0-9-]+)/model-credentials", ModelCredentialViewSet,
                basename="model-credential")

urlpatterns = [
    path("me/", MeView.as_view(), name="me"),
    path("capacity/", CapacityView.as_view(), name="capacity"),
    *router.urls,
]
