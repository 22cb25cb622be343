"""/api/v1/tenants/<slug>/service-accounts/[<id>/[tokens/[<token_id>/]]]: a tenant's service
accounts and their tokens. Everyone who sees the tenant reads them (never a token's value);
its owners create, change, disable, enable and delete them and issue and revoke their tokens;
platform admins alone link one to a Keycloak client. Another tenant's service account is a
404."""

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.scopes import Scope
from core.api.tokens import ApiTokenCreatedSerializer, ApiTokenSerializer

from . import service_accounts as services
from .models import ServiceAccount, Tenant
from .rules import tenant_get_for_user
from .selectors import tenant_service_accounts

SCOPES_FIELD = serializers.ListField(
    child=serializers.ChoiceField(choices=Scope.choices), required=False,
    help_text="What a Keycloak client-credentials token of keycloak_client_id may do (its own "
    "API tokens carry their own scopes).",
)


class ServiceAccountSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None,
                                       allow_null=True, read_only=True)
    active = serializers.SerializerMethodField()
    tokens = ApiTokenSerializer(source="user.tokens", many=True, read_only=True,
                                help_text="Its API tokens, newest first, with their last use.")
    scopes = SCOPES_FIELD

    class Meta:
        model = ServiceAccount
        fields = ["id", "name", "username", "role", "scopes", "keycloak_client_id", "created_by",
                  "created_at", "disabled_at", "active", "tokens"]

    def get_active(self, account: ServiceAccount) -> bool:
        return account.disabled_at is None


class ServiceAccountCreateSerializer(serializers.ModelSerializer):
    scopes = SCOPES_FIELD
    # The service validates the name (a DNS-1123 label) and its uniqueness: its field errors.
    name = serializers.CharField(max_length=63)
    keycloak_client_id = serializers.CharField(
        max_length=255, required=False, allow_null=True, allow_blank=True,
        help_text="The Keycloak client whose client-credentials tokens act as this account: "
        "platform admins only link or change it (anyone else changing it gets a 400 field "
        "error).",
    )

    class Meta:
        model = ServiceAccount
        fields = ["name", "role", "scopes", "keycloak_client_id"]


class ServiceAccountChangeSerializer(ServiceAccountCreateSerializer):
    class Meta(ServiceAccountCreateSerializer.Meta):
        fields = ["role", "scopes", "keycloak_client_id"]
        extra_kwargs = {"role": {"required": False}}


class ServiceAccountViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """A tenant's service accounts: non-human members (member or viewer) whose tokens CI
    systems use; a Keycloak client may act as one with client-credentials tokens."""

    serializer_class = ServiceAccountSerializer
    queryset = ServiceAccount.objects.none()

    def _tenant(self) -> Tenant:
        return tenant_get_for_user(user=self.request.user, slug=self.kwargs["tenant_slug"])

    def get_queryset(self) -> QuerySet[ServiceAccount]:
        if getattr(self, "swagger_fake_view", False):
            return ServiceAccount.objects.none()
        return tenant_service_accounts(tenant=self._tenant())

    def _account(self) -> ServiceAccount:
        return get_object_or_404(self.get_queryset(), pk=self.kwargs["pk"])

    def _shown(self, account: ServiceAccount) -> dict:
        fresh = get_object_or_404(tenant_service_accounts(tenant=account.tenant), pk=account.pk)
        return ServiceAccountSerializer(fresh).data

    @extend_schema(request=ServiceAccountCreateSerializer,
                   responses={201: ServiceAccountSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        tenant = self._tenant()
        body = ServiceAccountCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        account = services.service_account_create(
            actor=request.user, tenant=tenant, name=data["name"],
            role=data.get("role", ServiceAccount.ROLES[0][0]),
            scopes=data.get("scopes", [Scope.READ]),
            keycloak_client_id=data.get("keycloak_client_id"),
        )
        return Response(self._shown(account), status=status.HTTP_201_CREATED)

    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        return Response(ServiceAccountSerializer(self._account()).data)

    @extend_schema(request=ServiceAccountChangeSerializer, responses=ServiceAccountSerializer)
    def partial_update(self, request: Request, *args, **kwargs) -> Response:
        """Change its role, its Keycloak client's scopes, or (platform admins only) its
        Keycloak client."""
        account = self._account()
        body = ServiceAccountChangeSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        account = services.service_account_update(
            actor=request.user, account=account, role=data.get("role"), scopes=data.get("scopes"),
            keycloak_client_id=data.get("keycloak_client_id"),
            change_client_id="keycloak_client_id" in data,
        )
        return Response(self._shown(account))

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, *args, **kwargs) -> Response:
        """Delete it with its tokens."""
        services.service_account_delete(actor=request.user, account=self._account())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=ServiceAccountSerializer)
    @action(detail=True, methods=["post"], filter_backends=[])
    def disable(self, request: Request, *args, **kwargs) -> Response:
        """Its tokens, and its Keycloak client's, stop working until it is enabled again."""
        account = services.service_account_set_disabled(
            actor=request.user, account=self._account(), disabled=True)
        return Response(self._shown(account))

    @extend_schema(request=None, responses=ServiceAccountSerializer)
    @action(detail=True, methods=["post"], filter_backends=[])
    def enable(self, request: Request, *args, **kwargs) -> Response:
        account = services.service_account_set_disabled(
            actor=request.user, account=self._account(), disabled=False)
        return Response(self._shown(account))

    @extend_schema(methods=["GET"], responses=ApiTokenSerializer(many=True))
    @extend_schema(methods=["POST"], request=ApiTokenSerializer,
                   responses={201: ApiTokenCreatedSerializer})
    @action(detail=True, methods=["get", "post"], filter_backends=[], pagination_class=None)
    def tokens(self, request: Request, *args, **kwargs) -> Response:
        """Its API tokens with their scopes, expiry and last use; owners issue one (its value
        is in the answer, once)."""
        account = self._account()
        if request.method == "GET":
            return Response(ApiTokenSerializer(account.user.tokens, many=True).data)
        body = ApiTokenSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        issued = services.service_account_token_create(
            actor=request.user, account=account, name=body.validated_data["name"],
            expires_at=body.validated_data.get("expires_at"),
            scopes=body.validated_data.get("scopes", [Scope.ADMIN]),
        )
        return Response(ApiTokenSerializer(issued.token).data | {"token": issued.raw},
                        status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: None})
    @action(detail=True, methods=["delete"], url_path=r"tokens/(?P<token_id>[0-9]+)",
            url_name="token", filter_backends=[])
    def token(self, request: Request, *args, **kwargs) -> Response:
        """Revoke one of its tokens."""
        account = self._account()
        token = get_object_or_404(account.user.api_tokens.all(), pk=kwargs["token_id"])
        services.service_account_token_revoke(actor=request.user, account=account, token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)
