"""Writes about webhooks themselves: register, change, delete, disable and enable a hook,
reveal its secret, send it a test event, redeliver a delivery. Each in one transaction with its
audit event; the secret is never audited, logged or returned but by `webhook_create` and
`webhook_secret_reveal`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from core.audit import audit
from core.errors import RuleViolation
from core.queueing import enqueue_on_commit
from core.sealed import open_sealed, seal

from ...access.models import Tenant
from ..models import SUBSCRIBABLE, DeliveryStatus, EventType, Webhook, WebhookDelivery
from ..selectors import may_manage_webhooks
from ..signing import secret_generate
from ..transport import UnsafeUrl, url_check
from .delivery import SEND_TASK, delivery_create, webhook_disable_now

EVENT_TYPES = {value for value, _ in SUBSCRIBABLE}


def _managed(actor: Any, tenant: Tenant | None) -> None:
    if not may_manage_webhooks(actor, tenant):
        raise PermissionDenied(
            "Only platform admins manage the hooks for every tenant."
            if tenant is None else "Only the tenant's owners manage its webhooks."
        )


def _clean(*, name: str, url: str, event_types: Iterable[str], format: str) -> dict[str, Any]:
    errors: dict[str, list[str]] = {}
    name, url = (name or "").strip(), (url or "").strip()
    if not name:
        errors["name"] = ["Required."]
    elif len(name) > Webhook._meta.get_field("name").max_length:
        errors["name"] = ["At most 100 characters."]
    if len(url) > Webhook._meta.get_field("url").max_length:
        errors["url"] = ["At most 500 characters."]
    else:
        try:
            url_check(url, allow_localhost=settings.WEBHOOK_ALLOW_INSECURE_LOCALHOST)
        except UnsafeUrl as exc:
            errors["url"] = [str(exc)]
    types = sorted(set(event_types or ()))
    if not types:
        errors["event_types"] = ["Pick at least one event."]
    elif unknown := [t for t in types if t not in EVENT_TYPES]:
        errors["event_types"] = [f"No such event: {', '.join(map(str, unknown))[:200]}."]
    if format not in Webhook.Format.values:
        errors["format"] = ["Standard or Slack."]
    if errors:
        raise ValidationError(errors)
    return {"name": name, "url": url, "event_types": types, "format": format}


def _shown(hook: Webhook) -> dict[str, Any]:
    return {"name": hook.name, "url": hook.url, "event_types": hook.event_types,
            "format": hook.format}


@transaction.atomic
def webhook_create(*, actor: Any, tenant: Tenant | None, name: str, url: str,
                   event_types: Iterable[str], format: str = Webhook.Format.STANDARD,
                   ) -> tuple[Webhook, str]:
    """Register a hook for `tenant`'s events (None: every tenant's, platform admins only).
    Returns it and its new secret, shown to the person once."""
    _managed(actor, tenant)
    fields = _clean(name=name, url=url, event_types=event_types, format=format)
    secret = secret_generate()
    hook = Webhook.objects.create(tenant=tenant, sealed_secret=seal(secret), created_by=actor,
                                  **fields)
    audit(actor=actor, action="webhook.create", obj=hook, tenant=tenant, changes=_shown(hook))
    return hook, secret


@transaction.atomic
def webhook_update(*, actor: Any, webhook: Webhook, name: str, url: str,
                   event_types: Iterable[str], format: str) -> Webhook:
    _managed(actor, webhook.tenant)
    fields = _clean(name=name, url=url, event_types=event_types, format=format)
    hook = Webhook.objects.select_for_update().get(pk=webhook.pk)
    before = _shown(hook)
    for key, value in fields.items():
        setattr(hook, key, value)
    hook.updated_at = timezone.now()
    hook.save()
    after = _shown(hook)
    changes = {key: {"from": before[key], "to": after[key]}
               for key in after if before[key] != after[key]}
    if changes:
        audit(actor=actor, action="webhook.update", obj=hook, tenant=hook.tenant, changes=changes)
    return hook


@transaction.atomic
def webhook_delete(*, actor: Any, webhook: Webhook) -> None:
    _managed(actor, webhook.tenant)
    audit(actor=actor, action="webhook.delete", obj=webhook, tenant=webhook.tenant,
          changes=_shown(webhook))
    Webhook.objects.filter(pk=webhook.pk).delete()


@transaction.atomic
def webhook_disable(*, actor: Any, webhook: Webhook) -> Webhook:
    _managed(actor, webhook.tenant)
    hook = Webhook.objects.select_for_update().get(pk=webhook.pk)
    if not hook.enabled:
        return hook
    webhook_disable_now(hook=hook, actor=actor,
                        reason=f"Disabled by {actor.get_username()}.")
    return hook


@transaction.atomic
def webhook_enable(*, actor: Any, webhook: Webhook) -> Webhook:
    """Enable the hook again, its failure count (and how long they have lasted) from zero
    (deliveries failed while it was disabled stay failed: redeliver those wanted)."""
    _managed(actor, webhook.tenant)
    hook = Webhook.objects.select_for_update().get(pk=webhook.pk)
    if hook.enabled:
        return hook
    was = hook.disabled_reason
    hook.enabled, hook.disabled_at, hook.disabled_reason = True, None, ""
    hook.consecutive_failures, hook.failing_since, hook.updated_at = 0, None, timezone.now()
    hook.save()
    audit(actor=actor, action="webhook.enable", obj=hook, tenant=hook.tenant,
          changes={"disabled_reason": was})
    return hook


@transaction.atomic
def webhook_secret_reveal(*, actor: Any, webhook: Webhook) -> str:
    """The hook's signing secret, for its managers; each look is audited."""
    _managed(actor, webhook.tenant)
    audit(actor=actor, action="webhook.secret_reveal", obj=webhook, tenant=webhook.tenant)
    return open_sealed(webhook.sealed_secret)


def _enabled(webhook: Webhook) -> None:
    if not webhook.enabled:
        raise RuleViolation(f"The webhook {webhook.name} is disabled: enable it first.")


@transaction.atomic
def webhook_test_send(*, actor: Any, webhook: Webhook) -> WebhookDelivery:
    """Send the hook a `webhook.test` event now (whatever events it hears about)."""
    _managed(actor, webhook.tenant)
    hook = Webhook.objects.select_for_update().get(pk=webhook.pk)
    _enabled(hook)
    tenant = hook.tenant
    data = {"webhook": {"id": hook.pk, "name": hook.name},
            "message": f"{actor.get_username()} sent a test event from the portal."}
    [delivery] = delivery_create(hooks=[hook], event_type=EventType.WEBHOOK_TEST,
                                 tenant=tenant, data=data)
    audit(actor=actor, action="webhook.test", obj=hook, tenant=tenant,
          changes={"event_id": delivery.event_id})
    return delivery


@transaction.atomic
def webhook_delivery_redeliver(*, actor: Any, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again, as it was (the same webhook-id: receivers may deduplicate), with
    a fresh round of retries."""
    _managed(actor, delivery.webhook.tenant)
    # The delivery's row only (the sender locks the hook's row while holding the delivery's),
    # and without waiting: a worker holds it while sending, for up to WEBHOOK_TIMEOUT_SECONDS.
    locked = (WebhookDelivery.objects.select_for_update(of=("self",), skip_locked=True)
              .select_related("webhook").filter(pk=delivery.pk).first())
    if locked is None:
        raise RuleViolation("That delivery is being sent right now: try again in a moment.")
    _enabled(locked.webhook)
    if locked.status == DeliveryStatus.PENDING:
        raise RuleViolation("That delivery is still being tried.")
    was = locked.status
    locked.status, locked.attempts, locked.next_attempt_at = (DeliveryStatus.PENDING, 0,
                                                              timezone.now())
    locked.save(update_fields=["status", "attempts", "next_attempt_at"])
    audit(actor=actor, action="webhook.redeliver", obj=locked.webhook,
          tenant=locked.webhook.tenant, changes={"event_id": locked.event_id, "was": was})
    enqueue_on_commit(SEND_TASK, locked.pk)
    return locked
