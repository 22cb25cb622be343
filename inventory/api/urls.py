"""Inventory endpoints under /api/v1/."""

from django.urls import path

from core.api.routers import PortalRouter

from . import views

router = PortalRouter()
router.register("nodes", views.NodeViewSet, basename="node")
router.register("sites", views.SiteViewSet, basename="site")
router.register("racks", views.RackViewSet, basename="rack")
router.register("gpus", views.GPUViewSet, basename="gpu")
router.register("health-events", views.HealthEventViewSet, basename="health-event")

urlpatterns = [
    path("fleet/summary/", views.FleetSummaryView.as_view(), name="fleet-summary"),
    path("inventory/import/", views.ImportView.as_view(), name="inventory-import"),
    path("inventory/export/", views.ExportView.as_view(), name="inventory-export"),
    *router.urls,
]
