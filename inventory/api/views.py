"""Inventory endpoints: thin viewsets over the selectors and services."""

from dataclasses import asdict

from django.db.models import Prefetch
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.scopes import TokenScopes

from .. import transfer
from ..filters import NodeFilterSet
from ..models import GPU, NIC, HealthEvent, Node, NodeValidation, Rack, Site
from ..selectors.export import inventory_export_nested, inventory_export_records
from ..selectors.fleet import (
    fleet_gpu_counts_by_model,
    fleet_gpu_sharing_by_model,
    fleet_health_summary,
    fleet_nodes_by_state,
    fleet_totals,
)
from ..selectors.nodes import nodes_for_list
from ..services import health, lifecycle
from ..services.transfer import inventory_import
from ..tenancy import tenant_directory
from . import serializers as s


class IsPlatformAdmin(BasePermission):
    message = "Hardware inventory is for platform admins."

    def has_permission(self, request, view) -> bool:
        return tenant_directory().is_platform_admin(request.user)


class HasAnyRole(BasePermission):
    message = "You hold no role in the portal."

    def has_permission(self, request, view) -> bool:
        return tenant_directory().has_any_role(request.user)


class FleetSummaryView(APIView):
    """Totals, nodes by state, the health summary and how each GPU model's GPUs are handed out
    (platform admins)."""

    permission_classes = [TokenScopes, IsPlatformAdmin]

    @extend_schema(responses=s.FleetSummarySerializer)
    def get(self, request):
        gpu_counts = fleet_gpu_counts_by_model()  # one scan of the GPUs for all three
        return Response({
            "totals": fleet_totals(gpu_counts),
            "nodes_by_state": {value: count for value, _, count, _ in fleet_nodes_by_state()},
            "health": asdict(fleet_health_summary(gpu_counts)),
            "gpu_sharing": {
                row.model: {"whole": row.whole, "mig": row.mig, "hami": row.hami,
                            "hami_reserved": row.hami_reserved}
                for row in fleet_gpu_sharing_by_model(gpu_counts)
            },
        })


# The columns NodeListSerializer shows of the node itself (its JSON documents from the cluster
# sync are read and decoded only for a node's own page).
NODE_API_LIST_FIELDS = (
    *(name for name in s.NodeListSerializer.Meta.fields
      if name not in {"site", "rack", "gpu_count", "gpu_model", "health", "open_events"}),
    "rack__name", "rack__site__slug",
)


class NodeViewSet(viewsets.ReadOnlyModelViewSet):
    """Nodes with their GPUs, NICs, health and lifecycle; actions move them (admins only)."""

    permission_classes = [TokenScopes, IsPlatformAdmin]
    filterset_class = NodeFilterSet
    queryset = Node.objects.none()

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Node.objects.none()
        if self.action == "list":
            return nodes_for_list().only(*NODE_API_LIST_FIELDS)
        queryset = nodes_for_list()
        if self.action == "retrieve":
            queryset = queryset.prefetch_related(
                Prefetch("gpus", queryset=GPU.objects.select_related("node").order_by("index")),
                Prefetch("nics", queryset=NIC.objects.order_by("name")),
                Prefetch("health_events", queryset=HealthEvent.objects.select_related("node")),
                "validations",
            )
        return queryset

    def get_serializer_class(self):
        if self.action == "retrieve":
            return s.NodeDetailSerializer
        return {
            "transition": s.TransitionSerializer,
            "validations": s.ValidationResultSerializer,
            "retirement": s.RetirementSerializer,
        }.get(self.action, s.NodeListSerializer if self.action == "list" else s.ReasonSerializer)

    def _node_id(self) -> int:
        return get_object_or_404(Node, pk=self.kwargs["pk"]).pk

    def _detail(self) -> Response:
        self.action = "retrieve"  # answer every move with the node as it is now
        node = get_object_or_404(self.get_queryset(), pk=self.kwargs["pk"])
        return Response(s.NodeDetailSerializer(node).data)

    def _moved(self, service, **extra) -> Response:
        node_id = self._node_id()  # a missing node is a 404 whatever the body says
        body = s.ReasonSerializer(data=self.request.data)
        body.is_valid(raise_exception=True)
        service(node_id=node_id, actor=self.request.user, reason=body.validated_data["reason"],
                **extra)
        return self._detail()

    @extend_schema(request=s.ReasonSerializer, responses=s.NodeDetailSerializer)
    @action(detail=True, methods=["post"])
    def cordon(self, request, pk=None):
        return self._moved(lifecycle.node_cordon)

    @extend_schema(request=s.ReasonSerializer, responses=s.NodeDetailSerializer)
    @action(detail=True, methods=["post"])
    def uncordon(self, request, pk=None):
        return self._moved(lifecycle.node_uncordon)

    @extend_schema(request=s.ReasonSerializer, responses=s.NodeDetailSerializer)
    @action(detail=True, methods=["post"])
    def drain(self, request, pk=None):
        return self._moved(lifecycle.node_drain)

    @extend_schema(request=s.ReasonSerializer, responses=s.NodeDetailSerializer)
    @action(detail=True, methods=["post"], url_path="return-to-service")
    def return_to_service(self, request, pk=None):
        return self._moved(lifecycle.node_return_to_service)

    @extend_schema(request=s.TransitionSerializer, responses=s.NodeDetailSerializer)
    @action(detail=True, methods=["post"])
    def transition(self, request, pk=None):
        node_id = self._node_id()
        body = s.TransitionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        lifecycle.node_transition(node_id=node_id, actor=request.user,
                                  target=body.validated_data["target"],
                                  reason=body.validated_data["reason"])
        return self._detail()

    @extend_schema(
        request=s.ValidationResultSerializer, responses={201: s.NodeValidationSerializer}
    )
    @action(detail=True, methods=["post"])
    def validations(self, request, pk=None):
        node_id = self._node_id()
        body = s.ValidationResultSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result: NodeValidation = lifecycle.node_validation_record(
            node_id=node_id, actor=request.user, **body.validated_data
        )
        return Response(s.NodeValidationSerializer(result).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.RetirementSerializer, responses=s.NodeDetailSerializer)
    @action(detail=True, methods=["post"])
    def retirement(self, request, pk=None):
        node_id = self._node_id()
        body = s.RetirementSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        lifecycle.node_retirement_record(node_id=node_id, actor=request.user,
                                         **body.validated_data)
        return self._detail()


class SiteViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [TokenScopes, IsPlatformAdmin]
    serializer_class = s.SiteSerializer
    queryset = Site.objects.order_by("name")


class RackViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [TokenScopes, IsPlatformAdmin]
    serializer_class = s.RackSerializer
    queryset = Rack.objects.select_related("site").order_by("site__name", "name")
    filterset_fields = ["site"]


class GPUViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [TokenScopes, IsPlatformAdmin]
    serializer_class = s.GPUSerializer
    queryset = GPU.objects.select_related("node").order_by("node__hostname", "index")
    filterset_fields = ["node", "model", "health", "mig_capable"]


class HealthEventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                         viewsets.GenericViewSet):
    permission_classes = [TokenScopes, IsPlatformAdmin]
    serializer_class = s.HealthEventSerializer
    queryset = HealthEvent.objects.select_related("node").order_by("-opened_at", "-id")
    filterset_fields = {"node": ["exact"], "severity": ["exact"], "kind": ["exact"],
                        "resolved_at": ["isnull"]}

    @extend_schema(request=s.ReasonSerializer, responses=s.HealthEventSerializer)
    @action(detail=True, methods=["post"])
    def resolve(self, request, pk=None):
        event = self.get_object()
        body = s.ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        event = health.health_event_resolve(event_id=event.pk, actor=request.user,
                                            note=body.validated_data["reason"])
        return Response(s.HealthEventSerializer(event).data)


class ImportView(APIView):
    """Import nodes, GPUs or NICs (CSV) or nested nodes (JSON); all or nothing.

    With `dry_run` (the default) nothing is written and the answer previews each row. A real
    run with any error answers 400 with every row's errors, and writes nothing."""

    permission_classes = [TokenScopes, IsPlatformAdmin]

    @extend_schema(
        request=s.ImportRequestSerializer,
        responses={
            200: OpenApiResponse(s.ImportResultSerializer, description="A dry run's preview."),
            201: OpenApiResponse(s.ImportResultSerializer, description="Imported."),
            400: OpenApiResponse(
                s.ImportResultSerializer,
                description="Nothing imported: every row's errors (or, for a malformed "
                "request, the API's error format).",
            ),
        },
    )
    def post(self, request):
        body = s.ImportRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        result = inventory_import(text=data["data"], fmt=data["format"],
                                  objects=data["objects"], dry_run=data["dry_run"],
                                  actor=request.user)
        code = status.HTTP_200_OK
        if not result.ok and not result.dry_run:
            code = status.HTTP_400_BAD_REQUEST
        elif result.applied:
            code = status.HTTP_201_CREATED
        return Response(result.as_dict(), status=code)


class ExportView(APIView):
    """The inventory as CSV (`?as=csv&objects=nodes|gpus|nics`) or nested JSON (`?as=json`).

    (`as`, not `format`: DRF keeps `format` for choosing its own renderer.)"""

    permission_classes = [TokenScopes, IsPlatformAdmin]

    @extend_schema(
        parameters=[
            OpenApiParameter("as", str, enum=["json", "csv"], description="json (default), csv"),
            OpenApiParameter("objects", str, enum=list(transfer.COLUMNS),
                             description="CSV only: nodes (default), gpus or nics"),
        ],
        responses={(200, "application/json"): OpenApiTypes.OBJECT,
                   (200, "text/csv"): OpenApiTypes.STR},
    )
    def get(self, request):
        fmt = request.query_params.get("as", "json")
        if fmt not in ("json", "csv"):
            raise exceptions.ValidationError({"as": ["json or csv"]})
        if fmt == "csv":
            objects = request.query_params.get("objects", "nodes")
            if objects not in transfer.COLUMNS:
                raise exceptions.ValidationError({"objects": ["nodes, gpus or nics"]})
            body = transfer.render_csv(inventory_export_records(objects=objects), objects=objects)
            return HttpResponse(body, content_type="text/csv; charset=utf-8")
        return Response({"nodes": inventory_export_nested()})
