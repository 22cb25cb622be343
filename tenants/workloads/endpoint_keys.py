"""API keys of inference endpoints: the row each key is (its digest, never the key once its
Secret exists), how long a rotated key keeps working, and the read the endpoint's page and the
API share. Where the fleet's gateway
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

# How long a rotated key keeps working beside its replacement, in hours (0: it is revoked at
# once), as managed API consoles offer it: long enough for its callers to swap keys.
ROTATION_GRACE_HOURS = {0: "no longer: revoke it now", 1: "for 1 hour", 24: "for 24 hours",
                        168: "for 7 days"}
DEFAULT_ROTATION_GRACE_HOURS = 24


class EndpointKey(models.Model):
    """An API key of an inference endpoint: the gateway checks it; the portal keeps its hash.

    The raw key is shown once, at creation. Until the reconcile has put it in its Secret on the
    cluster it is kept sealed (`core.sealed`), so that a failed apply can be retried; then the
    sealed copy is cleared and only the digest remains. A key rotated with a grace period keeps
    working until `expires_at`; the endpoint's reconcile then revokes it (`revoked_at` is that
    moment, `revoked_by` nobody)."""

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
    expires_at = models.DateTimeField(null=True, blank=True,
                                      help_text="A rotated key's end of grace: refused after it.")
    replaced_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+", help_text="The key its rotation made.")
    # Seen by the gateway in use: only the simulated fleet's gateway records it (Envoy
    # Gateway's metrics do not name the key a request carried).
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                # A rotated key in its grace period shares its name with its replacement.
                fields=["workload", "name"],
                condition=Q(revoked_at__isnull=True, expires_at__isnull=True),
                name="unique_active_endpoint_key_name",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.expired

    @property
    def expired(self) -> bool:
        """Its grace ran out: revoked at `expires_at` (or due to be, until the reconcile or the
        sweep records it), rather than revoked by hand before."""
        return self.expires_at is not None and (
            self.revoked_at or timezone.now()) >= self.expires_at

    @property
    def expiring(self) -> bool:
        """Rotated, still working beside its replacement until `expires_at`."""
        return self.expires_at is not None and self.is_active

    @property
    def secret_name(self) -> str:
        return key_secret_name(self.workload.name, self.pk)


def _beside_replacements(keys: list[EndpointKey]) -> list[EndpointKey]:
    """Newest first, but each rotated key right after the key that replaced it."""
    present = {key.pk for key in keys}
    followers: dict[int, list[EndpointKey]] = {}
    for key in keys:
        if key.replaced_by_id in present:
            followers.setdefault(key.replaced_by_id, []).append(key)
    ordered: list[EndpointKey] = []
    for key in keys:
        if key.replaced_by_id in present:
            continue  # placed after its replacement
        chain = [key]
        while chain:  # not recursive: a key rotated a thousand times is a chain that long
            current = chain.pop()
            ordered.append(current)
            chain.extend(reversed(followers.get(current.pk, ())))
    return ordered


def secret_missing(*, workload: Workload, key: EndpointKey) -> bool:
    """Whether the cluster was last seen without the active key's Secret (deleted by hand)."""
    present = workload.details.get("key_secrets")
    seen_at = workload.observation_recorded_at
    return bool(key.is_active and key.delivered_at and present is not None and seen_at
                and key.delivered_at < seen_at
                and key_secret_name(workload.name, key.pk) not in present)


def endpoint_keys_of(*, workload: Workload) -> list[EndpointKey]:
    """An endpoint's keys, newest first with each rotated key beside its replacement, each
    marked `needs_rotation` when the cluster was last seen without its Secret (deleted by hand)
    or its sealed copy cannot be opened."""
    keys = _beside_replacements(list(workload.endpoint_keys.select_related("created_by")))
    hints = {key.pk: key.hint for key in keys}
    for key in keys:
        key.workload = workload  # its Secret's name, without a query per key
        key.replaced_by_hint = hints.get(key.replaced_by_id)
        key.needs_rotation = secret_missing(workload=workload, key=key)
    return keys
