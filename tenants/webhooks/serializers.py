"""Serializers of the webhooks API. The secret is in no response but the one that creates the
hook (its `secret`, shown once)."""

from __future__ import annotations

from rest_framework import serializers

from .models import SUBSCRIBABLE, Webhook, WebhookDelivery


class WebhookWriteSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    url = serializers.CharField(max_length=500, help_text="https://...; a public address.")
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=SUBSCRIBABLE), allow_empty=False, max_length=20)
    format = serializers.ChoiceField(choices=Webhook.Format.choices,
                                     default=Webhook.Format.STANDARD)


class WebhookCreateSerializer(WebhookWriteSerializer):
    tenant = serializers.SlugField(
        allow_null=True, required=False, default=None,
        help_text="The tenant's slug; null: a hook for every tenant (platform admins only).")


class WebhookSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)

    class Meta:
        model = Webhook
        fields = ["id", "tenant", "name", "url", "event_types", "format", "enabled",
                  "disabled_at", "disabled_reason", "consecutive_failures", "last_success_at",
                  "created_at", "updated_at"]
        read_only_fields = fields


class WebhookCreatedSerializer(WebhookSerializer):
    secret = serializers.CharField(read_only=True,
                                   help_text="The signing secret (whsec_...): shown this once.")

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class WebhookDeliverySerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookDelivery
        fields = ["id", "event_id", "event_type", "status", "attempts", "next_attempt_at",
                  "last_attempt_at", "response_code", "response_body", "last_error",
                  "duration_ms", "created_at", "delivered_at"]
        read_only_fields = fields
