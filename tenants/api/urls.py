"""Tenants' endpoints under /api/v1/."""

from django.urls import path

from core.api.routers import PortalRouter

from ..access.api import ServiceAccountViewSet
from ..credentials.api import ModelCredentialViewSet
from ..dashboard.api import MeView, TenantViewSet
from ..quota.api import CapacityView, QuotaRequestViewSet
from ..webhooks.api import WebhookViewSet
from ..workloads.api import WorkloadViewSet
from ..workloads.endpoint_key_api import EndpointKeyViewSet

router = PortalRouter()
router.register("tenants", TenantViewSet, basename="tenant")
router.register("quota-requests", QuotaRequestViewSet, basename="quota-request")
router.register("workloads", WorkloadViewSet, basename="workload")
router.register("webhooks", WebhookViewSet, basename="webhook")
router.register(r"tenants/(?P<tenant_slug>[a-z0-9-]+)/model-credentials", ModelCredentialViewSet,
                basename="model-credential")
router.register(r"tenants/(?P<tenant_slug>[a-z0-9-]+)/service-accounts", ServiceAccountViewSet,
                basename="service-account")

# An endpoint's API keys, nested under it (the router has no nesting).
endpoint_keys = [
    path("workloads/<int:workload_pk>/keys/",
         EndpointKeyViewSet.as_view({"get": "list", "post": "create"}),
         name="endpoint-key-list"),
    path("workloads/<int:workload_pk>/keys/<int:pk>/",
         EndpointKeyViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
         name="endpoint-key-detail"),
    path("workloads/<int:workload_pk>/keys/<int:pk>/rotate/",
         EndpointKeyViewSet.as_view({"post": "rotate"}), name="endpoint-key-rotate"),
]

urlpatterns = [
    path("me/", MeView.as_view(), name="me"),
    *endpoint_keys,
    path("capacity/", CapacityView.as_view(), name="capacity"),
    *router.urls,
]
