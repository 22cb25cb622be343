"""Reads about webhooks, scoped to what the user may manage: a tenant's owners (and platform
admins) see its hooks; platform admins alone see the hooks for every tenant. Any other hook is
a 404, in the pages and the API alike."""

from __future__ import annotations

from django.db.models import Count, Max, Q, QuerySet
from django.shortcuts import get_object_or_404

from ..access.models import Membership, Tenant
from ..access.rules import access_for, tenants_managed_by
from .models import DeliveryStatus, Webhook, WebhookDelivery


def may_manage_webhooks(user, tenant: Tenant | None) -> bool:
    """A tenant's owners manage its hooks; platform admins every hook (and the admin hooks)."""
    access = access_for(user)
    if access.platform_admin:
        return True
    return tenant is not None and access.tenant_roles.get(tenant.pk) == Membership.Role.OWNER


def webhooks_visible_to(user) -> QuerySet[Webhook]:
    if access_for(user).platform_admin:
        return Webhook.objects.all()
    return Webhook.objects.filter(tenant__in=tenants_managed_by(user))


def webhooks_for_list(queryset: QuerySet[Webhook]) -> QuerySet[Webhook]:
    """Hooks with their deliveries counted by state and the last one's time; one query."""
    return (
        queryset.select_related("tenant")
        .defer("sealed_secret")
        .annotate(
            pending_count=Count("deliveries", filter=Q(deliveries__status=DeliveryStatus.PENDING)),
            failed_count=Count("deliveries", filter=Q(deliveries__status=DeliveryStatus.FAILED)),
            last_delivery_at=Max("deliveries__created_at"),
        )
        .order_by("tenant__name", "name", "pk")
    )


def webhook_get_for_user(*, user, webhook_id: int, tenant: Tenant | None = None,
                         admin_only: bool = False) -> Webhook:
    """The hook `webhook_id` if `user` manages it (and it is `tenant`'s, or an admin hook when
    `admin_only`); otherwise a 404."""
    hooks = webhooks_visible_to(user).select_related("tenant")
    if tenant is not None:
        hooks = hooks.filter(tenant=tenant)
    elif admin_only:
        hooks = hooks.filter(tenant__isnull=True)
    return get_object_or_404(hooks, pk=webhook_id)


def webhook_deliveries(*, webhook: Webhook, status: str = "",
                       event_type: str = "") -> QuerySet[WebhookDelivery]:
    """The hook's delivery log, newest first, optionally of one state and one event type."""
    deliveries = WebhookDelivery.objects.filter(webhook=webhook).defer("payload")
    if status:
        deliveries = deliveries.filter(status=status)
    if event_type:
        deliveries = deliveries.filter(event_type=event_type)
    return deliveries.order_by("-created_at", "-pk")
