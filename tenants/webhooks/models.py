"""Webhooks and their deliveries (the outbox the sender works through)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.choices import ColoredChoices, colored

from ..access.models import Tenant


class EventType(models.TextChoices):
    """What a hook may hear about (the `type` of a delivery's payload)."""

    WORKLOAD_READY = "workload.ready", "Workload ready"
    WORKLOAD_FAILED = "workload.failed", "Workload failed"
    WORKLOAD_PREEMPTED = "workload.preempted", "Workload preempted"
    WORKLOAD_IDLE_WARNED = "workload.idle_warned", "Workload warned as idle"
    QUOTA_REQUEST_DECIDED = "quota_request.decided", "Quota request decided"
    BUDGET_ALERT = "budget.alert", "Budget alert"
    INVOICE_ISSUED = "invoice.issued", "Invoice issued"
    WEBHOOK_TEST = "webhook.test", "Test event"


# What a hook subscribes to (the test event goes to one hook, when asked, whatever it hears).
SUBSCRIBABLE = [choice for choice in EventType.choices if choice[0] != EventType.WEBHOOK_TEST]


class Webhook(models.Model):
    """An HTTPS endpoint that hears about one tenant's events (no tenant: every tenant's)."""

    class Format(models.TextChoices):
        STANDARD = "standard", "Standard Webhooks JSON"
        SLACK = "slack", "Slack-compatible text"

    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.CASCADE,
                               related_name="webhooks",
                               help_text="Empty: a platform admin's hook for every tenant.")
    name = models.CharField(max_length=100, help_text="What it is for, e.g. CI notifier.")
    url = models.URLField("URL", max_length=500)
    event_types = models.JSONField(default=list, help_text="The event types it hears about.")
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.STANDARD)
    # The signing secret (whsec_...), sealed: owners may reveal it, nobody else reads it.
    sealed_secret = models.TextField(editable=False)
    enabled = models.BooleanField(default=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    # When the current run of failed tries began (None: the last try succeeded): a hook is
    # disabled only once its failures have lasted WEBHOOK_DISABLE_AFTER_HOURS too.
    failing_since = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tenant_id", "name", "id"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_admin_hook(self) -> bool:
        return self.tenant_id is None


@colored({"pending": "warning", "succeeded": "success", "failed": "danger"})
class DeliveryStatus(ColoredChoices):
    PENDING = "pending", "Pending"
    SUCCEEDED = "succeeded", "Delivered"
    FAILED = "failed", "Failed"


class WebhookDelivery(models.Model):
    """One event owed to one hook: written with the event, sent after commit, retried."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+", help_text="Whose event it is.")
    event_id = models.CharField(max_length=40, help_text="The webhook-id header (msg_...).")
    event_type = models.CharField(max_length=40, choices=EventType.choices)
    payload = models.JSONField(help_text="The body sent, in the hook's format.")
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices,
                              default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True)
    last_error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(fields=["webhook", "event_id"], name="unique_webhook_event"),
        ]
        indexes = [
            models.Index(fields=["next_attempt_at"], condition=models.Q(status="pending"),
                         name="webhook_delivery_due"),
            models.Index(fields=["webhook", "-created_at"], name="webhook_delivery_log"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id}"

    @property
    def status_color(self) -> str:
        return DeliveryStatus.color(self.status)
