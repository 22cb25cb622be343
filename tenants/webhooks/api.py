"""The webhooks API: /api/v1/webhooks/ (list, create, read, change, delete), a hook's
delivery log (/{id}/deliveries/, ?status= and ?event_type=) and its test event (/{id}/test/).

Scoped as the pages are: a tenant's owners see and manage its hooks, platform admins every hook
and the hooks for every tenant (`tenant: null`); any other hook is a 404. The secret is shown in
the creation's answer only.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from ..access.rules import tenant_get_for_user
from . import services
from .forms import DeliveryFilterForm
from .models import Webhook
from .selectors import webhook_deliveries, webhook_get_for_user, webhooks_visible_to
from .serializers import (
    WebhookCreatedSerializer,
    WebhookCreateSerializer,
    WebhookDeliverySerializer,
    WebhookSerializer,
    WebhookWriteSerializer,
)


class WebhookViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Webhooks of the tenants you own (all of them, for platform admins)."""

    serializer_class = WebhookSerializer
    queryset = Webhook.objects.none()

    def get_queryset(self) -> QuerySet[Webhook]:
        if getattr(self, "swagger_fake_view", False):
            return Webhook.objects.none()
        return (webhooks_visible_to(self.request.user).select_related("tenant")
                .defer("sealed_secret").order_by("pk"))

    def _hook(self, pk: str) -> Webhook:
        return webhook_get_for_user(user=self.request.user, webhook_id=int(pk))

    @extend_schema(request=WebhookCreateSerializer, responses={201: WebhookCreatedSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        """Register a hook; the answer holds its signing secret, this once."""
        body = WebhookCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        slug = data.pop("tenant")
        tenant = tenant_get_for_user(user=request.user, slug=slug) if slug else None
        hook, secret = services.webhook_create(actor=request.user, tenant=tenant, **data)
        hook.secret = secret
        return Response(WebhookCreatedSerializer(hook).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=WebhookSerializer)
    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(WebhookSerializer(self._hook(pk)).data)

    @extend_schema(request=WebhookWriteSerializer, responses=WebhookSerializer)
    def update(self, request: Request, pk: str) -> Response:
        """Change the hook's name, URL, events and format (all of them)."""
        hook = self._hook(pk)
        body = WebhookWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(WebhookSerializer(services.webhook_update(
            actor=request.user, webhook=hook, **body.validated_data)).data)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, pk: str) -> Response:
        services.webhook_delete(actor=request.user, webhook=self._hook(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        parameters=[
            OpenApiParameter("status", OpenApiTypes.STR, enum=["pending", "succeeded", "failed"]),
            OpenApiParameter("event_type", OpenApiTypes.STR),
        ],
        responses=WebhookDeliverySerializer(many=True),
    )
    @action(detail=True, methods=["get"])
    def deliveries(self, request: Request, pk: str) -> Response:
        """The hook's deliveries, newest first."""
        hook = self._hook(pk)
        filters = DeliveryFilterForm(request.query_params)
        if not filters.is_valid():
            raise ValidationError({name: list(errors) for name, errors in filters.errors.items()})
        page = self.paginate_queryset(webhook_deliveries(webhook=hook, **filters.filters()))
        return self.get_paginated_response(WebhookDeliverySerializer(page, many=True).data)

    @extend_schema(request=None, responses={202: WebhookDeliverySerializer})
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str) -> Response:
        """Send the hook a webhook.test event now; the answer is its delivery (pending)."""
        delivery = services.webhook_test_send(actor=request.user, webhook=self._hook(pk))
        return Response(WebhookDeliverySerializer(delivery).data,
                        status=status.HTTP_202_ACCEPTED)
