"""The model credentials API: /api/v1/tenants/<slug>/model-credentials/[<name>/].

Everyone who sees the tenant lists them (name, kind, where used, whether applied); owners and
members create, replace (PUT: new values) and delete them. The values are write-only: no
response holds them. Another tenant's credential is a 404, as in the pages.
"""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from ..access.models import Tenant
from ..access.rules import tenant_get_for_user
from . import services
from .models import ModelCredential
from .selectors import credential_get, credential_users, credentials_for_page, tenant_credentials
from .serializers import (
    CredentialCreateSerializer,
    CredentialValuesSerializer,
    ModelCredentialSerializer,
)


class ModelCredentialViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = ModelCredentialSerializer
    lookup_field = "name"
    lookup_value_regex = "[a-z0-9-]+"
    queryset = ModelCredential.objects.none()

    def _tenant(self) -> Tenant:
        return tenant_get_for_user(user=self.request.user, slug=self.kwargs["tenant_slug"])

    def get_queryset(self) -> QuerySet[ModelCredential]:
        if getattr(self, "swagger_fake_view", False):
            return ModelCredential.objects.none()
        return tenant_credentials(tenant=self._tenant())

    def list(self, request: Request, *args, **kwargs) -> Response:
        page = self.paginate_queryset(credentials_for_page(tenant=self._tenant()))
        return self.get_paginated_response(ModelCredentialSerializer(page, many=True).data)

    def _shown(self, credential: ModelCredential, tenant: Tenant) -> dict:
        credential.used_by = credential_users(tenant=tenant, names=[credential.name])[
            credential.name]
        return ModelCredentialSerializer(credential).data

    @extend_schema(request=CredentialCreateSerializer, responses={201: ModelCredentialSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        """Store a credential: `token` for kind `huggingface`; `access_key_id`,
        `secret_access_key` and optionally `s3_endpoint`, `s3_region`, `s3_use_https` for
        kind `s3`."""
        tenant = self._tenant()
        body = CredentialCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        credential = services.credential_create(
            actor=request.user, tenant=tenant, name=body.validated_data["name"],
            kind=body.validated_data["kind"], values=body.values(), **body.s3_settings(),
        )
        return Response(self._shown(credential, tenant), status=status.HTTP_201_CREATED)

    @extend_schema(responses=ModelCredentialSerializer)
    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        tenant = self._tenant()
        return Response(self._shown(credential_get(tenant=tenant, name=kwargs["name"]), tenant))

    @extend_schema(request=CredentialValuesSerializer, responses=ModelCredentialSerializer)
    def update(self, request: Request, *args, **kwargs) -> Response:
        """Replace the credential's values (and S3 settings); its name and kind stay."""
        tenant = self._tenant()
        credential = credential_get(tenant=tenant, name=kwargs["name"])
        body = CredentialValuesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        credential = services.credential_replace(
            actor=request.user, credential=credential, values=body.values(),
            **body.s3_settings(),
        )
        return Response(self._shown(credential, tenant))

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, *args, **kwargs) -> Response:
        """Delete the credential and its Secret; refused (400) while an endpoint uses it."""
        credential = credential_get(tenant=self._tenant(), name=kwargs["name"])
        services.credential_delete(actor=request.user, credential=credential)
        return Response(status=status.HTTP_204_NO_CONTENT)
