"""The tenants API: who you are, the tenants you may see and their members.

Another tenant's objects are not found (404), exactly as in the pages; a role that may see but
not act gets 403; bad input gets 400 with field errors.
"""

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..access import services
from ..access.models import Membership, Tenant
from ..access.rules import access_for, tenants_visible_to
from ..access.selectors import tenant_members
from ..access.serializers import (
    GpuLendingSerializer,
    MemberAddSerializer,
    MemberRoleSerializer,
    MemberSerializer,
    MeSerializer,
    TenantCreateSerializer,
    TenantSerializer,
)
from ..quota.selectors import tenant_quota_lines
from ..quota.serializers import QuotaLineSerializer
from ..workloads.models import IdlePolicy
from ..workloads.serializers import IdlePolicySerializer
from ..workloads.services.idle import POLICY_FIELDS, idle_policy_save


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


# The columns TenantSerializer shows, its cluster state's included.
TENANT_API_FIELDS = (
    "slug", "name", "cost_center", "isolation", "status", "cohort", "created_at",
    "desired_version", "applied_version", "applied_at", "reconcile_error", "reconcile_failed_at",
)


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
        tenants = tenants_visible_to(self.request.user).order_by("name")
        if self.action == "list":
            # What a row shows (its namespace is its slug's): not the manifests last applied.
            return tenants.only(*TENANT_API_FIELDS)
        return tenants

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

    @extend_schema(methods=["GET"], responses=IdlePolicySerializer)
    @extend_schema(methods=["PUT"], request=IdlePolicySerializer, responses=IdlePolicySerializer)
    @action(detail=True, methods=["get", "put"], url_path="idle-policy", pagination_class=None,
            filter_backends=[])
    def idle_policy(self, request: Request, slug: str) -> Response:
        """What the tenant does about idle GPUs (docs/idle-gpus.md): `off`, `warn` or `act`,
        a threshold, a window and a grace period, and the hours after which a notebook nobody
        used is stopped (null: the fleet's default; `effective` has them filled in). Everyone
        who sees the tenant reads it; its owners change it."""
        tenant = self.get_object()
        policy = IdlePolicy.objects.filter(tenant=tenant).first() or IdlePolicy(tenant=tenant)
        if request.method == "GET":
            return Response(IdlePolicySerializer(policy).data)
        serializer = IdlePolicySerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        saved = idle_policy_save(tenant=tenant, actor=request.user, **{
            name: serializer.validated_data.get(name) for name in POLICY_FIELDS})
        return Response(IdlePolicySerializer(saved).data)

    @extend_schema(methods=["GET"], responses=GpuLendingSerializer)
    @extend_schema(methods=["PUT"], request=GpuLendingSerializer, responses=GpuLendingSerializer)
    @action(detail=True, methods=["get", "put"], url_path="gpu-lending", pagination_class=None,
            filter_backends=[])
    def gpu_lending(self, request: Request, slug: str) -> Response:
        """Whether a dedicated tenant lends its idle reserved GPUs to its cohort (docs/tenants.md,
        "Fair share through Kueue"). Everyone who sees the tenant reads it; its owners change
        it; what the others borrow of it now is each quota line's `lent`."""
        tenant = self.get_object()
        if request.method == "GET":
            return Response(GpuLendingSerializer(tenant).data)
        serializer = GpuLendingSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        saved = services.tenant_gpu_lending_set(
            actor=request.user, tenant=tenant,
            lends=serializer.validated_data["lends_reserved_gpus"])
        return Response(GpuLendingSerializer(saved).data)

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
