"""/api/v1/tokens/: a user's own personal API tokens."""

from django.shortcuts import get_object_or_404
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response

from core.models import ApiToken
from core.tokens import api_token_create, api_token_revoke, api_tokens_of

from .scopes import Scope


class ApiTokenSerializer(serializers.ModelSerializer):
    active = serializers.BooleanField(source="is_active", read_only=True)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=Scope.choices),
        allow_empty=False,
        required=False,
        help_text="What the token may do: read (every read outside billing), workloads "
        "(launch, scale, stop, delete; includes read), billing:read, admin (everything your "
        "role allows). Left out: admin.",
    )

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "hint",
            "created_at",
            "last_used_at",
            "expires_at",
            "revoked_at",
            "active",
            "scopes",
        ]
        read_only_fields = ["id", "hint", "created_at", "last_used_at", "revoked_at"]
        extra_kwargs = {
            "expires_at": {
                "help_text": "When the token stops working (at most API_TOKEN_MAX_LIFETIME_DAYS "
                "after its creation; the longest allowed when left out)."
            },
            "last_used_at": {
                "help_text": "The token's last use, recorded at most once a minute."
            },
        }

    def to_representation(self, instance):
        body = super().to_representation(instance)
        # The expiry that applies, which the lifetime cap may have brought forward.
        body["expires_at"] = serializers.DateTimeField().to_representation(instance.ends_at)
        return body


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    token = serializers.CharField(read_only=True, help_text="Shown once; store it safely.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]


class ApiTokenViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """List, create and revoke (DELETE) your personal API tokens."""

    serializer_class = ApiTokenSerializer
    queryset = ApiToken.objects.none()  # for the schema; get_queryset scopes to the user

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return ApiToken.objects.none()
        return api_tokens_of(user=self.request.user)

    def get_serializer_class(self):
        return ApiTokenCreatedSerializer if self.action == "create" else ApiTokenSerializer

    def create(self, request, *args, **kwargs):
        serializer = ApiTokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        issued = api_token_create(
            user=request.user,
            name=serializer.validated_data["name"],
            expires_at=serializer.validated_data.get("expires_at"),
            scopes=serializer.validated_data.get("scopes", [Scope.ADMIN]),
        )
        body = ApiTokenSerializer(issued.token).data | {"token": issued.raw}
        return Response(body, status=status.HTTP_201_CREATED)

    def destroy(self, request, *args, **kwargs):
        token = get_object_or_404(self.get_queryset(), pk=kwargs["pk"])
        api_token_revoke(token=token, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
