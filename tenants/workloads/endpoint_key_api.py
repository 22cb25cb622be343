"""An inference endpoint's API keys over the API: list, create (the answer holds the key, this
once), read, revoke (DELETE) and rotate (the old key working on for a grace period: `grace_hours`),
under /api/v1/workloads/<id>/keys/.

As on the endpoint's page: another tenant's endpoint (or a workload of another kind) is a 404;
viewers and finance read names, first characters and dates, and get 403 on writes; the key
itself is in the answer of a create or rotate only, never again.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.scopes import Scope

from ..access.rules import tenants_operated_by
from .endpoint_keys import (
    DEFAULT_ROTATION_GRACE_HOURS,
    ROTATION_GRACE_HOURS,
    EndpointKey,
    endpoint_keys_of,
)
from .models import Workload
from .selectors import workload_get_for_user
from .serializers import _UNSTORABLE, _unstorable
from .services import endpoint_keys


class EndpointKeySerializer(serializers.ModelSerializer):
    """One key: never the key itself, only its first characters."""

    state = serializers.SerializerMethodField(
        help_text="`pending` (not on the gateway yet), `active` (until `expires_at` when it "
                  "was rotated with a grace period), `needs_rotation` (its Secret is gone from "
                  "the cluster) or `revoked` (by hand, or at `expires_at`).")
    created_by = serializers.CharField(source="created_by.username", default=None,
                                       read_only=True)

    class Meta:
        model = EndpointKey
        fields = ("id", "name", "hint", "state", "created_at", "created_by", "delivered_at",
                  "expires_at", "replaced_by", "revoked_at", "last_used_at")
        read_only_fields = fields

    def get_state(self, key: EndpointKey) -> str:
        if not key.is_active:
            return "revoked"
        if getattr(key, "needs_rotation", False):
            return "needs_rotation"
        return "active" if key.delivered_at else "pending"


class IssuedKeySerializer(EndpointKeySerializer):
    """A key just made, with `key`: shown this once; the portal keeps only its hash."""

    key = serializers.CharField(read_only=True, help_text="The key: store it now.")

    class Meta(EndpointKeySerializer.Meta):
        fields = (*EndpointKeySerializer.Meta.fields, "key")
        read_only_fields = fields


class EndpointKeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="e.g. `chat-app` or `ci`")

    def validate_name(self, value: str) -> str:
        if _unstorable(value):
            raise serializers.ValidationError(_UNSTORABLE)
        return value


class EndpointKeyRotateSerializer(serializers.Serializer):
    grace_hours = serializers.ChoiceField(
        choices=list(ROTATION_GRACE_HOURS), default=DEFAULT_ROTATION_GRACE_HOURS,
        help_text="How long the old key keeps working beside the new one, in hours: 0 revokes "
                  "it now; 1, 24 (the default) or 168 (7 days) set its `expires_at`.")


class EndpointKeyViewSet(viewsets.GenericViewSet):
    """API keys of an inference endpoint: owners and members create, revoke and rotate them;
    every role that sees the tenant reads them."""

    write_scope = Scope.WORKLOADS

    serializer_class = EndpointKeySerializer
    pagination_class = None
    queryset = EndpointKey.objects.none()

    def _endpoint(self, workload_pk: str) -> Workload:
        workload = workload_get_for_user(user=self.request.user, workload_id=int(workload_pk))
        if workload.kind != "inference":
            raise Http404
        return workload

    def _operated(self, workload_pk: str) -> Workload:
        workload = self._endpoint(workload_pk)
        if not tenants_operated_by(self.request.user).filter(pk=workload.tenant_id).exists():
            raise PermissionDenied("Only the tenant's owners and members manage endpoint keys.")
        return workload

    def _keys(self, workload: Workload) -> QuerySet[EndpointKey] | list[EndpointKey]:
        return endpoint_keys_of(workload=workload)

    def _one(self, workload: Workload, pk: str) -> EndpointKey:
        key = next((k for k in self._keys(workload) if k.pk == int(pk)), None)
        if key is None:
            raise Http404
        return key

    def _issued(self, issued: endpoint_keys.IssuedKey) -> Response:
        issued.key.key = issued.raw
        data = IssuedKeySerializer(issued.key).data
        response = Response(data, status=status.HTTP_201_CREATED)
        response["Cache-Control"] = "no-store"
        return response

    @extend_schema(responses=EndpointKeySerializer(many=True))
    def list(self, request: Request, workload_pk: str) -> Response:
        """The endpoint's keys, newest first (revoked ones too)."""
        keys = self._keys(self._endpoint(workload_pk))
        return Response(EndpointKeySerializer(keys, many=True).data)

    @extend_schema(request=EndpointKeyCreateSerializer, responses={201: IssuedKeySerializer})
    def create(self, request: Request, workload_pk: str) -> Response:
        """Make a key: the answer holds it, this once. The gateway accepts it within moments."""
        workload = self._operated(workload_pk)
        body = EndpointKeyCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._issued(endpoint_keys.endpoint_key_create(
            workload_id=workload.pk, actor=request.user, name=body.validated_data["name"]))

    @extend_schema(responses=EndpointKeySerializer)
    def retrieve(self, request: Request, workload_pk: str, pk: str) -> Response:
        """One key (without the key)."""
        return Response(EndpointKeySerializer(self._one(self._endpoint(workload_pk), pk)).data)

    @extend_schema(request=None, responses={200: EndpointKeySerializer})
    def destroy(self, request: Request, workload_pk: str, pk: str) -> Response:
        """Revoke it: the gateway refuses it within moments (401). Revoked already: 400."""
        workload = self._operated(workload_pk)
        key = self._one(workload, pk)
        key = endpoint_keys.endpoint_key_revoke(workload_id=workload.pk, key_id=key.pk,
                                                actor=request.user)
        return Response(EndpointKeySerializer(key).data)

    @extend_schema(request=EndpointKeyRotateSerializer, responses={201: IssuedKeySerializer})
    def rotate(self, request: Request, workload_pk: str, pk: str) -> Response:
        """Replace it by a new key of the same name (in the answer, this once); the old one
        keeps working for `grace_hours` (its `expires_at`, its `replaced_by` the new key), or
        is revoked now with 0. A key already replaced: 400 (revoke it instead)."""
        workload = self._operated(workload_pk)
        key = self._one(workload, pk)
        body = EndpointKeyRotateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._issued(endpoint_keys.endpoint_key_rotate(
            workload_id=workload.pk, key_id=key.pk, actor=request.user,
            grace_hours=body.validated_data["grace_hours"]))
