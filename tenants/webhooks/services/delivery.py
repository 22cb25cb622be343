"""The webhooks' outbox: events written beside what happened, sent after commit, retried.

`webhook_event_emit` is called inside the transaction of the event: it writes one delivery per
enabled hook that hears about it (the tenant's hooks and the admin hooks for every tenant) and
queues each one's sending once the transaction commits, so an event is sent only if it happened
and a broker that is down loses nothing (`webhook_deliveries_sweep`, run by beat and at worker
start, sends what is due).

`webhook_delivery_send` claims one due delivery with a row lock (`SKIP LOCKED`: two workers
never send the same one at once), signs and sends it, and records the answer. A failure is
tried again after a capped exponential backoff with jitter, up to WEBHOOK_MAX_ATTEMPTS; every
failed attempt counts against the hook, and WEBHOOK_DISABLE_AFTER_FAILURES failures in a row
disable it (its people are mailed and its page says why) once they have lasted
WEBHOOK_DISABLE_AFTER_HOURS since the first of them: a burst of events during a short outage
reaches the count quickly, and must not. Delivery is at least once: receivers deduplicate by
the webhook-id header.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from datetime import UTC, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils import timezone

from core.audit import audit
from core.outbox import email_enqueue
from core.queueing import enqueue_on_commit, send_task
from core.sealed import open_sealed

from ...access.models import RoleAssignment, Tenant
from ...access.rules import tenant_owner_emails
from .. import transport
from ..models import DeliveryStatus, Webhook, WebhookDelivery
from ..payloads import slack_payload, standard_payload
from ..signing import signed_headers

logger = logging.getLogger(__name__)

SEND_TASK = "tenants.webhooks.tasks.webhook_delivery_send_task"
RETRY_BASE = timedelta(seconds=30)


def _tenant_data(tenant: Tenant | None) -> dict[str, Any] | None:
    return None if tenant is None else {"slug": tenant.slug, "name": tenant.name}


def delivery_create(*, hooks: list[Webhook], event_type: str, tenant: Tenant | None,
                    data: dict[str, Any]) -> list[WebhookDelivery]:
    """One delivery of the event per hook, each in the hook's format, sent after commit."""
    now = timezone.now()
    data = {**data, "tenant": _tenant_data(tenant)}
    event_id = f"msg_{uuid.uuid4().hex}"
    payloads = {
        Webhook.Format.STANDARD: standard_payload(event_type=event_type, at=now, data=data),
        Webhook.Format.SLACK: slack_payload(event_type=event_type, data=data),
    }
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(webhook=hook, tenant=tenant, event_id=event_id, event_type=event_type,
                        payload=payloads[hook.format], created_at=now, next_attempt_at=now)
        for hook in hooks
    )
    for delivery in deliveries:
        enqueue_on_commit(SEND_TASK, delivery.pk)
    return deliveries


def webhook_event_emit(*, event_type: str, tenant: Tenant,
                       data: dict[str, Any]) -> list[WebhookDelivery]:
    """Owe `event_type` (with `data`, and the tenant added) to every enabled hook that hears
    about it: call inside the transaction of what happened. One query when no hook does."""
    hooks = [
        hook for hook in Webhook.objects.filter(Q(tenant=tenant) | Q(tenant__isnull=True),
                                                enabled=True).only("pk", "format", "event_types")
        if event_type in hook.event_types
    ]
    if not hooks:
        return []
    return delivery_create(hooks=hooks, event_type=event_type, tenant=tenant, data=data)


def portal_link(path: str) -> str:
    return f"{settings.PORTAL_URL}{path}"


def retry_delay(attempts: int) -> timedelta:
    """How long after its `attempts`-th failure a delivery is tried again: doubling from 30 s,
    capped at WEBHOOK_RETRY_MAX_SECONDS, each spread by ±25 % so that a receiver that comes
    back is not hit by every waiting delivery at once."""
    cap = timedelta(seconds=settings.WEBHOOK_RETRY_MAX_SECONDS)
    delay = min(cap, RETRY_BASE * 2 ** min(max(0, attempts - 1), 30))
    return min(cap, delay * random.uniform(0.75, 1.25))  # noqa: S311 - spread, not secrecy


def _people(hook: Webhook) -> list[str]:
    """Whom a disabled hook's notice goes to: its tenant's owners, or the platform admins."""
    if hook.tenant is not None:
        return tenant_owner_emails([hook.tenant.slug]).get(hook.tenant.slug, [])
    return list(
        get_user_model().objects.filter(
            Q(is_superuser=True) | Q(platform_roles__role=RoleAssignment.Role.PLATFORM_ADMIN),
            is_active=True,
        ).exclude(email="").values_list("email", flat=True).distinct()
    )


def hook_page(hook: Webhook) -> str:
    if hook.tenant is None:
        return reverse("tenants:admin-webhook-detail", args=[hook.pk])
    return reverse("tenants:webhook-detail", args=[hook.tenant.slug, hook.pk])


def webhook_disable_now(*, hook: Webhook, actor: Any | None, reason: str) -> None:
    """Disable the (locked, enabled) hook: its waiting deliveries fail, the audit says why, and
    when the portal did it (`actor` None) its people are mailed."""
    now = timezone.now()
    hook.enabled, hook.disabled_at, hook.disabled_reason = False, now, reason[:300]
    hook.updated_at = now
    hook.save(update_fields=["enabled", "disabled_at", "disabled_reason", "updated_at"])
    # Skipping those a worker is sending right now (it holds them, and may wait for this hook's
    # row): waiting for them here would deadlock; the sender fails them once it sees the hook.
    waiting = list(WebhookDelivery.objects.select_for_update(skip_locked=True)
                   .filter(webhook=hook, status=DeliveryStatus.PENDING)
                   .values_list("pk", flat=True))
    WebhookDelivery.objects.filter(pk__in=waiting).update(
        status=DeliveryStatus.FAILED, last_error="Not sent: the webhook was disabled.")
    audit(actor=actor, action="webhook.disable", obj=hook, tenant=hook.tenant,
          changes={"reason": hook.disabled_reason,
                   "consecutive_failures": hook.consecutive_failures,
                   "failing_since": hook.failing_since and hook.failing_since.isoformat()})
    if actor is not None:
        return
    whose = hook.tenant.name if hook.tenant is not None else "every tenant"
    email_enqueue(
        to=_people(hook), topic="webhook.disabled",
        subject=f"The webhook {hook.name} of {whose} was disabled",
        body="\n".join([
            f"The portal disabled the webhook {hook.name} ({hook.url}): {reason}", "",
            "No events are sent to it until it is enabled again. Fix the receiver, then "
            "enable the hook and redeliver the events you need on its page:",
            portal_link(hook_page(hook)), "", "— AI Factory Portal",
        ]),
    )


def _record_failure(delivery: WebhookDelivery, hook: Webhook, now) -> None:
    if delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
        delivery.status = DeliveryStatus.FAILED
    else:
        delivery.next_attempt_at = now + retry_delay(delivery.attempts)
    Webhook.objects.filter(pk=hook.pk).update(
        consecutive_failures=F("consecutive_failures") + 1,
        failing_since=Coalesce(F("failing_since"), Value(now)))
    limit = settings.WEBHOOK_DISABLE_AFTER_FAILURES
    lasted_from = now - timedelta(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS)
    # Under the hook's row lock: of two deliveries failing at once, one disables it.
    locked = (Webhook.objects.select_for_update(of=("self",)).select_related("tenant")
              .filter(pk=hook.pk, enabled=True, consecutive_failures__gte=limit,
                      failing_since__lte=lasted_from).first())
    if locked is not None:
        delivery.status = DeliveryStatus.FAILED
        delivery.save()
        since = locked.failing_since.astimezone(UTC)
        webhook_disable_now(hook=locked, actor=None, reason=(
            f"{locked.consecutive_failures} deliveries in a row failed since "
            f"{since:%Y-%m-%d %H:%M} UTC; the last: {delivery.last_error}"))


def webhook_delivery_send(*, delivery_id: int) -> str | None:
    """Send one delivery if it is due; its state afterwards (None: not due, sent already, or
    another worker has it right now)."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("webhook")
            .filter(pk=delivery_id, status=DeliveryStatus.PENDING,
                    next_attempt_at__lte=timezone.now())
            .first()
        )
        if delivery is None:
            return None
        hook = delivery.webhook
        if not hook.enabled:
            delivery.status, delivery.last_error = (DeliveryStatus.FAILED,
                                                    "Not sent: the webhook is disabled.")
            delivery.save(update_fields=["status", "last_error"])
            return delivery.status
        body = json.dumps(delivery.payload, separators=(",", ":")).encode()
        answer = transport.post(
            hook.url, body=body, timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            allow_localhost=settings.WEBHOOK_ALLOW_INSECURE_LOCALHOST,
            headers=_signed(hook, delivery.event_id, body),
        )
        now = timezone.now()
        delivery.attempts += 1
        delivery.last_attempt_at, delivery.duration_ms = now, answer.duration_ms
        delivery.response_code, delivery.response_body = answer.status, answer.body
        delivery.last_error = answer.error
        if answer.ok:
            delivery.status, delivery.delivered_at = DeliveryStatus.SUCCEEDED, now
            Webhook.objects.filter(pk=hook.pk).update(consecutive_failures=0, failing_since=None,
                                                      last_success_at=now)
        else:
            logger.warning("Webhook %s: delivery %s failed: %s", hook.pk, delivery.event_id,
                           answer.error)
            _record_failure(delivery, hook, now)
        delivery.save()
        return delivery.status


def _signed(hook: Webhook, event_id: str, body: bytes) -> dict[str, str]:
    return signed_headers(secret=open_sealed(hook.sealed_secret), message_id=event_id,
                          timestamp=int(time.time()), body=body)


def webhook_deliveries_due(*, limit: int = 500) -> list[int]:
    return list(
        WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING,
                                       next_attempt_at__lte=timezone.now())
        .order_by("next_attempt_at", "pk").values_list("pk", flat=True)[:limit]
    )


def webhook_deliveries_sweep(*, limit: int = 500) -> int:
    """Queue the sending of every delivery that is due; returns how many were queued."""
    due = webhook_deliveries_due(limit=limit)
    for pk in due:
        send_task(SEND_TASK, pk)
    return len(due)
