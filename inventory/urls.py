from django.urls import path

from .views import fleet, nodes, racks, transfer

app_name = "inventory"

urlpatterns = [
    path("sync/", fleet.sync_now, name="sync-now"),
    path("ingest/", fleet.ingest_now, name="ingest-now"),
    path("nodes/", nodes.node_list, name="node-list"),
    path("nodes/<int:node_id>/", nodes.node_detail, name="node-detail"),
    path("nodes/<int:node_id>/action/", nodes.node_action, name="node-action"),
    path("nodes/<int:node_id>/validation/", nodes.node_validation, name="node-validation"),
    path("nodes/<int:node_id>/retirement/", nodes.node_retirement, name="node-retirement"),
    path("events/<int:event_id>/resolve/", nodes.health_event_resolve, name="event-resolve"),
    path("racks/", racks.rack_list, name="rack-list"),
    path("racks/<int:rack_id>/", racks.rack_detail, name="rack-detail"),
    path("import/", transfer.import_view, name="import"),
    path("export/", transfer.export_view, name="export"),
]
