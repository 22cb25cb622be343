"""Tenants' REST API: thin DRF views over the access rules, selectors and services.

Another tenant's objects are not found (404), exactly as in the pages; a role that may see but
not act gets 403; bad input gets 400 with field errors; a move the request's state machine does
not allow (someone decided first) gets 409.
"""

from collections.abc import Mapping

import django_filters
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.state_machine import InvalidTransition

from . import quota_requests, services
from .access import access_for, tenant_get_for_user, tenants_operated_by, tenants_visible_to
from .models import Membership, QuotaRequest, Tenant
from .selectors import (
    quota_preview,
    quota_request_get_for_user,
    quota_requests_visible_to,
    tenant_members,
    tenant_quota_lines,
)
from .serializers import (
    ApproveSerializer,
    MemberAddSerializer,
    MemberRoleSerializer,
    MemberSerializer,
    MeSerializer,
    QuotaLineSerializer,
    QuotaPreviewLineSerializer,
    QuotaPreviewRequestSerializer,
    QuotaRequestCreateSerializer,
    QuotaRequestSerializer,
    RejectSerializer,
    TenantCreateSerializer,
    TenantSerializer,
)


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The object changed state: reload it."
    default_code = "conflict"


class MeView(APIView):
    """The signed-in user, their platform roles and their tenant memberships."""

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        user = request.user
        memberships = user.memberships.filter(tenant__status=Tenant.Status.ACTIVE).select_related(
            "tenant"
        )
        data = {
            "id": user.pk,
            "username": user.get_username(),
            "get_full_name": user.get_full_name(),
            "email": user.email,
            "roles": access_for(user).roles,
            "tenants": memberships,
        }
        return Response(MeSerializer(data).data)


def _operated_tenant(user, data) -> Tenant:
    """The tenant named in `data` if `user` may ask for its quota; 404 if not visible, 403 if
    only viewing; 400 if the body is not a JSON object."""
    if not isinstance(data, Mapping):
        raise ValidationError({"non_field_errors": ["Expected a JSON object."]})
    try:
        # The field's own checks (a string, no NUL character) before the lookup uses it.
        slug = serializers.CharField(allow_blank=True).run_validation(data.get("tenant", ""))
    except ValidationError as exc:
        raise ValidationError({"tenant": exc.detail}) from None
    tenant = tenant_get_for_user(user=user, slug=slug)
    if not tenants_operated_by(user).filter(pk=tenant.pk).exists():
        raise PermissionDenied("Viewers cannot ask for quota.")
    return tenant


class TenantViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Tenants you may see, with their state on the cluster; platform admins create them."""

    serializer_class = TenantSerializer
    lookup_field = "slug"
    lookup_value_regex = "[a-z0-9-]+"
    queryset = Tenant.objects.none()

    def get_queryset(self) -> QuerySet[Tenant]:
        if getattr(self, "swagger_fake_view", False):
            return Tenant.objects.none()
        return tenants_visible_to(self.request.user).order_by("name")

    @extend_schema(request=TenantCreateSerializer, responses={201: TenantSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        if not access_for(request.user).platform_admin:
            raise PermissionDenied("Only platform admins create tenants.")
        serializer = TenantCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        tenant = services.tenant_create(actor=request.user, **serializer.validated_data)
        return Response(TenantSerializer(tenant).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=QuotaLineSerializer(many=True))
    @action(detail=True, methods=["get"])
    def quota(self, request: Request, slug: str) -> Response:
        """Granted quota per resource class with what is in use."""
        tenant = self.get_object()
        page = self.paginate_queryset(tenant_quota_lines(tenant=tenant))
        return self.get_paginated_response(QuotaLineSerializer(page, many=True).data)

    @extend_schema(methods=["GET"], responses=MemberSerializer(many=True))
    @extend_schema(methods=["POST"], request=MemberAddSerializer, responses={201: MemberSerializer})
    @action(detail=True, methods=["get", "post"])
    def members(self, request: Request, slug: str) -> Response:
        """The tenant's members; owners add people (by username or e-mail) with a role."""
        tenant = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(tenant_members(tenant=tenant))
            return self.get_paginated_response(MemberSerializer(page, many=True).data)
        serializer = MemberAddSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        membership = services.tenant_member_add(
            actor=request.user,
            tenant=tenant,
            username_or_email=serializer.validated_data["user"],
            role=serializer.validated_data["role"],
        )
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(methods=["PATCH"], request=MemberRoleSerializer, responses=MemberSerializer)
    @extend_schema(methods=["DELETE"], responses={204: None})
    @action(
        detail=True,
        methods=["patch", "delete"],
        url_path=r"members/(?P<member_id>\d+)",
        url_name="member",
    )
    def member(self, request: Request, slug: str, member_id: str) -> Response:
        """Owners change a member's role or remove them (not memberships from Keycloak)."""
        tenant = self.get_object()
        membership = get_object_or_404(
            Membership.objects.select_related("user", "tenant"), tenant=tenant, pk=member_id
        )
        if request.method == "DELETE":
            services.tenant_member_remove(actor=request.user, membership=membership)
            return Response(status=status.HTTP_204_NO_CONTENT)
        serializer = MemberRoleSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        membership = services.tenant_member_change_role(
            actor=request.user, membership=membership, role=serializer.validated_data["role"]
        )
        return Response(MemberSerializer(membership).data)


class QuotaRequestFilter(django_filters.FilterSet):
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

    serializer_class = QuotaRequestSerializer
    filterset_class = QuotaRequestFilter
    queryset = QuotaRequest.objects.none()

    def get_queryset(self) -> QuerySet[QuotaRequest]:
        if getattr(self, "swagger_fake_view", False):
            return QuotaRequest.objects.none()
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
        tenant = _operated_tenant(request.user, request.data)
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
        )
        return Response(QuotaRequestSerializer(created).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=QuotaPreviewRequestSerializer, responses=QuotaPreviewLineSerializer(many=True)
    )
    # One line per resource asked for (a handful): answered whole, not paginated.
    @action(detail=False, methods=["post"], pagination_class=None)
    def preview(self, request: Request) -> Response:
        """What asking for `lines` would make the tenant's quota, and whether the fleet has it."""
        tenant = _operated_tenant(request.user, request.data)
        serializer = QuotaPreviewRequestSerializer(
            data=request.data, context={"isolation": tenant.isolation}
        )
        serializer.is_valid(raise_exception=True)
        lines = [(line["resource"], line["amount"]) for line in serializer.validated_data["lines"]]
        preview = quota_preview(tenant=tenant, lines=lines)
        return Response(QuotaPreviewLineSerializer(preview, many=True).data)

    @extend_schema(request=ApproveSerializer, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        quota_request = self._decision(pk)
        serializer = ApproveSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            quota_requests.quota_request_approve(
                request_id=quota_request.pk,
                approver=request.user,
                amounts=serializer.validated_data.get("amounts"),
                note=serializer.validated_data["note"],
            )
        except InvalidTransition as exc:
            raise Conflict(str(exc)) from exc
        return self._fresh(quota_request.pk)

    @extend_schema(request=RejectSerializer, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        quota_request = self._decision(pk)
        serializer = RejectSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            quota_requests.quota_request_reject(
                request_id=quota_request.pk,
                approver=request.user,
                reason=serializer.validated_data["reason"],
            )
        except InvalidTransition as exc:
            raise Conflict(str(exc)) from exc
        return self._fresh(quota_request.pk)

    @extend_schema(request=None, responses=QuotaRequestSerializer)
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str) -> Response:
        quota_request = self._request(pk)
        try:
            quota_requests.quota_request_withdraw(request_id=quota_request.pk, actor=request.user)
        except InvalidTransition as exc:
            raise Conflict(str(exc)) from exc
        return self._fresh(quota_request.pk)
