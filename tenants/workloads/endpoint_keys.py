"""API keys of inference endpoints: the row each key is (its digest, never the key once its
Secret exists), and the read the endpoint's page and the API share. Where the fleet's gateway
publishes an endpoint is `publishing.py`; the services that create, revoke, rotate and deliver
keys are `services/endpoint_keys.py`."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.validators import validate_readable_name

from .kinds.inference.exposure import key_secret_name
from .models import Workload


class EndpointKey(models.Model):
    """An API key of an inference endpoint: the gateway checks it; the portal keeps its hash.

    The raw key is shown once, at creation. Until the reconcile has put it in its Secret on the
    cluster it is kept sealed (`core.sealed`), so that a failed apply can be retried; then the
    sealed copy is cleared and only the digest remains."""

    PREFIX = "afk_"

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE,
                                 related_name="endpoint_keys")
    name = models.CharField(max_length=100, validators=[validate_readable_name])
    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="First characters, to tell keys apart.")
    sealed = models.TextField(blank=True, help_text="The key, sealed, until its Secret exists.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField("its Secret applied at", null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    removed_at = models.DateTimeField("its Secret deleted at", null=True, blank=True)
    # Seen by the gateway in use: only the simulated fleet's gateway records it (Envoy
    # Gateway's metrics do not name the key a request carried).
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "name"], condition=Q(revoked_at__isnull=True),
                name="unique_active_endpoint_key_name",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def secret_name(self) -> str:
        return key_secret_name(self.workload.name, self.pk)


def endpoint_keys_of(*, workload: Workload) -> list[EndpointKey]:
    """An endpoint's keys, newest first, each marked `needs_rotation` when the cluster was last
    seen without its Secret (deleted by hand) or its sealed copy cannot be opened."""
    keys = list(workload.endpoint_keys.select_related("created_by"))
    present = workload.details.get("key_secrets")
    seen_at = workload.observation_recorded_at
    for key in keys:
        key.workload = workload  # its Secret's name, without a query per key
        key.needs_rotation = bool(
            key.is_active and key.delivered_at and present is not None and seen_at
            and key.delivered_at < seen_at and key.secret_name not in present
        )
    return keys
