"""The quota requests API: owners and members ask; platform admins approve or reject.

Another tenant's requests are not found (404), exactly as in the pages; a role that may see but
not act gets 403; bad input gets 400 with field errors; a move the request's state machine does
not allow (someone decided first) gets 409.
"""

from dataclasses import asdict

import django_filters
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.filtering import FormOnceFilterSet
from core.api.scopes import Scope, TokenScopes

from ..access.rules import access_for
from ..api.lookups import operated_tenant
from . import services as quota_requests
from .capacity import capacity_by_resource_class
from .models import QuotaRequest
from .pricing import quoted_price
from .selectors import (
    quota_preview,
    quota_request_get_for_user,
    quota_requests_listed_to,
    quota_requests_visible_to,
)
from .serializers import (
    ApproveSerializer,
    CapacitySerializer,
    QuotaPreviewLineSerializer,
    QuotaPreviewRequestSerializer,
    QuotaRequestCreateSerializer,
    QuotaRequestSerializer,
    RejectSerializer,
)


class QuotaRequestFilter(FormOnceFilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug")
    status = django_filters.ChoiceFilter(choices=QuotaRequest.Status.choices)

    class Meta:
        model = QuotaRequest
        fields = ["tenant", "status"]


class QuotaRequestViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Quota requests of the tenants you may see. Owners and members ask; platform admins
    approve (optionally with changed amounts) or reject with a reason; the requester or an
    owner withdraws one still waiting."""

    # The preview only computes (nothing is asked or stored): a read.
    action_scopes = {"preview": Scope.READ}
    serializer_class = QuotaRequestSerializer
    filterset_class = QuotaRequestFilter
    queryset = QuotaRequest.objects.none()

    def get_queryset(self) -> QuerySet[QuotaRequest]:
        if getattr(self, "swagger_fake_view", False):
            return QuotaRequest.objects.none()
        if self.action == "list":
            return quota_requests_listed_to(self.request.user)
        return quota_requests_visible_to(self.request.user)

    def _request(self, pk: str) -> QuotaRequest:
        return quota_request_get_for_user(user=self.request.user, request_id=int(pk))

    def _decision(self, pk: str) -> QuotaRequest:
        quota_request = self._request(pk)  # 404 first: another tenant's request is not there
        if not access_for(self.request.user).platform_admin:
            raise PermissionDenied("Only platform admins decide on quota requests.")
        return quota_request

    @staticmethod
    def _fresh(pk: int) -> Response:
        return Response(QuotaRequestSerializer(QuotaRequest.objects.get(pk=pk)).data)

    @extend_schema(request=QuotaRequestCreateSerializer, responses={201: QuotaRequestSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        tenant = operated_tenant(request.user, request.data)
        serializer = QuotaRequestCreateSerializer(
            data=request.data, context={"isolation": tenant.isolation}
        )
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        created = quota_requests.quota_request_create(
            tenant=tenant,
            requested_by=request.user,
            lines=data["lines"],
            justification=data["justification"],
            ends_on=data.get("ends_on"),
            cluster=data.get("cluster"),
            quote=quoted_price((line["resource"], line["amount"]) for line in data["lines"]),
        )
        return Response(QuotaRequestSerializer(created).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=QuotaPreviewRequestSerializer, responses=QuotaPreviewLineSerializer(many=True)
    )
    # One line per resource asked for (a handful): answered whole, not paginated.
    @action(detail=False, methods=["post"], pagination_class=None)
    def preview(self, request: Request) -> Response:
        """What asking for `lines` would make the tenant's quota, and whether the fleet has it."""
        tenant = operated_tenant(request.user, request.data)
        serializer = QuotaPreviewRequestSerializer(
            data=request.data, context={"isolation": tenant.isolation}
        )
        serializer.is_valid(raise_exception=True)
        lines = [(line["resource"], line["amount"]) for line in serializer.validated_data["lines"]]
        preview = quota_preview(tenant=tenant, lines=lines,
                                cluster=serializer.validated_data.get("cluster"))
        return Response(QuotaPreviewLineSerializer(preview, many=True).data)

    @extend_schema(request=ApproveSerializer, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        quota_request = self._decision(pk)
        serializer = ApproveSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        quota_requests.quota_request_approve(
            request_id=quota_request.pk,
            approver=request.user,
            amounts=serializer.validated_data.get("amounts"),
            note=serializer.validated_data["note"],
        )
        return self._fresh(quota_request.pk)

    @extend_schema(request=RejectSerializer, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        quota_request = self._decision(pk)
        serializer = RejectSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        quota_requests.quota_request_reject(
            request_id=quota_request.pk,
            approver=request.user,
            reason=serializer.validated_data["reason"],
        )
        return self._fresh(quota_request.pk)

    @extend_schema(request=None, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str) -> Response:
        quota_request = self._request(pk)
        quota_requests.quota_request_withdraw(request_id=quota_request.pk, actor=request.user)
        return self._fresh(quota_request.pk)


class HasAnyRole(BasePermission):
    message = "You hold no role in the portal."

    def has_permission(self, request, view) -> bool:
        return access_for(request.user).has_any_access


class CapacityView(APIView):
    """Fleet capacity per resource class: installed, healthy, reserved, granted, in use."""

    permission_classes = [TokenScopes, HasAnyRole]

    @extend_schema(responses=CapacitySerializer(many=True))
    def get(self, request):
        rows = [asdict(row) for row in capacity_by_resource_class()]
        return Response(CapacitySerializer(rows, many=True).data)
