"""The directory sync's checkpoint: a read of Keycloak's directory that may span several runs."""

from django.db import models
from django.utils import timezone


class DirectoryRead(models.Model):
    """One read of the whole directory in progress (at most one), resumed run after run until
    complete, applied, then deleted."""

    issuer = models.CharField(max_length=255, help_text="The realm it reads (OIDC_ISSUER_URL).")
    client_id = models.CharField(max_length=255, help_text="KEYCLOAK_DIRECTORY_CLIENT_ID.")
    started_at = models.DateTimeField(default=timezone.now)
    runs = models.PositiveIntegerField(default=0, help_text="Sync runs that have read for it.")
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"directory read of {self.issuer} started {self.started_at:%Y-%m-%d %H:%M}"


class DirectoryAnswer(models.Model):
    """One Admin REST answer of a read (a group's id, a page of its members, a user, a user's
    role mappings), kept so that the next run need not ask again."""

    class Kind(models.TextChoices):
        GROUP = "group", "Group by path"
        MEMBERS = "members", "Page of a group's members"
        USER = "user", "User"
        ROLES = "roles", "User's role mappings"

    read = models.ForeignKey(DirectoryRead, on_delete=models.CASCADE, related_name="answers")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    key = models.CharField(max_length=512)
    value = models.JSONField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["read", "kind", "key"], name="directory_answer_unique_per_read"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key}"
