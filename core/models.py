"""Infrastructure models that know no domain: audit trail, API tokens, simulated fleet."""

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from .validators import validate_readable_name


class AuditEvent(models.Model):
    """One decision someone (or the system) took: who did what to which object, and why."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="audit_events",
    )
    actor_repr = models.CharField(max_length=150, blank=True, help_text="Actor at the time.")
    action = models.CharField(max_length=100, db_index=True)
    object_type = models.CharField(max_length=100, blank=True, db_index=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    # Kept as a slug, not a foreign key: the trail outlives the tenant and portal/ imports no app.
    tenant_slug = models.CharField(max_length=63, blank=True, db_index=True)
    changes = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_repr or 'system'} {self.action}"


class ApiToken(models.Model):
    """A personal API token for scripts; only its SHA-256 digest is stored."""

    PREFIX = "afp_"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, validators=[validate_readable_name])
    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="First characters, to tell tokens apart.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Values of core.api.scopes.Scope; the user's role still decides within them.
    scopes = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="unique_active_token_name_per_user",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @staticmethod
    def digest_of(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()

    @classmethod
    def generate(cls) -> str:
        return cls.PREFIX + secrets.token_urlsafe(32)

    @property
    def ends_at(self):
        """When the token stops working: its expiry, or API_TOKEN_MAX_LIFETIME_DAYS after its
        creation when that comes first (tokens made before the cap was set or lowered)."""
        cap = self.created_at + timedelta(days=settings.API_TOKEN_MAX_LIFETIME_DAYS)
        return cap if self.expires_at is None else min(self.expires_at, cap)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and self.ends_at > timezone.now()


class SimulatedObject(models.Model):
    """A Kubernetes object held by the simulated fleet (demo mode only)."""

    # The simulated cluster it lives in (an inventory cluster's slug; each is a fleet of its own).
    cluster = models.CharField(max_length=40, default="main")
    api_version = models.CharField(max_length=100)
    kind = models.CharField(max_length=100)
    namespace = models.CharField(max_length=253, blank=True)
    name = models.CharField(max_length=253)
    body = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    resource_version = models.PositiveBigIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "api_version", "kind", "namespace", "name"],
                name="unique_simulated_object_per_cluster",
            )
        ]
        ordering = ["kind", "namespace", "name"]

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


class OidcIdentity(models.Model):
    """The link from a portal user to their account at the OpenID Connect provider (`sub`)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identity"
    )
    # Keycloak's `sub` is a UUID unique across its realms; matching on it alone keeps accounts
    # when the realm's public URL (the issuer) moves or the realm is exported and imported.
    subject = models.CharField(max_length=255, unique=True)
    issuer = models.CharField(max_length=255, help_text="Issuer at the last sign-in.")
    # Keycloak's `email_verified` for the user's current e-mail, from the last sign-in or
    # directory sync: only a verified address may find this user (adding a member by e-mail).
    email_verified = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "OIDC identity"
        verbose_name_plural = "OIDC identities"
        ordering = ["subject"]

    def __str__(self) -> str:
        return f"{self.subject} ({self.issuer})"


class OutboxEmail(models.Model):
    """An e-mail the portal owes someone, written in the transaction of what it reports.

    Kept until the mail server took it: a broker or mail server that is down delays a decision's
    mail, never loses it (core.outbox sends, retries and sweeps).
    """

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    topic = models.CharField(max_length=100, help_text="What it reports: quota_request.approved.")
    to = models.JSONField(default=list)
    subject = models.CharField(max_length=300)
    body = models.TextField()
    sent_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "outbox e-mail"
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(sent_at__isnull=True),
                name="outbox_email_unsent",
            )
        ]

    def __str__(self) -> str:
        return self.subject
