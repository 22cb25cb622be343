"""Who uses the fleet and what they may use."""

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from inventory import resource_classes

from .validators import validate_dns1123_label


class Source(models.TextChoices):
    LOCAL = "local", "Granted in the portal"
    KEYCLOAK = "keycloak", "From Keycloak"


class Tenant(models.Model):
    """A team that shares the fleet; owns one namespace on the cluster."""

    class Isolation(models.TextChoices):
        DEDICATED = "dedicated", "Dedicated (whole GPUs on reserved nodes)"
        SHARED = "shared", "Shared (partitioned GPUs within the trust domain)"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUSPENDED = "suspended", "Suspended"

    slug = models.CharField(max_length=63, unique=True, validators=[validate_dns1123_label])
    name = models.CharField(max_length=100)
    cost_center = models.CharField(max_length=50, blank=True)
    isolation = models.CharField(max_length=20, choices=Isolation.choices, default=Isolation.SHARED)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    monthly_budget = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        default=Decimal("0"),
        validators=[MinValueValidator(Decimal("0"))],
        help_text="0 means no budget set.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def namespace(self) -> str:
        return f"tenant-{self.slug}"[:63]


class Membership(models.Model):
    """A user's role in a tenant."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"
        VIEWER = "viewer", "Viewer"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.LOCAL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tenant__name", "user__username"]
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="unique_membership")]

    def __str__(self) -> str:
        return f"{self.user} — {self.role} of {self.tenant}"


class RoleAssignment(models.Model):
    """A platform-wide role (platform admin, finance) held by a user."""

    class Role(models.TextChoices):
        PLATFORM_ADMIN = "platform_admin", "Platform admin"
        FINANCE = "finance", "Finance"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="platform_roles"
    )
    role = models.CharField(max_length=20, choices=Role.choices)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.LOCAL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["user__username", "role"]
        constraints = [models.UniqueConstraint(fields=["user", "role"], name="unique_role")]

    def __str__(self) -> str:
        return f"{self.user} — {self.get_role_display()}"


class Quota(models.Model):
    """How much of one resource class a tenant may hold at once."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quotas")
    resource = models.CharField(max_length=100)
    limit = models.PositiveIntegerField()
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tenant__name", "resource"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "resource"], name="unique_quota_resource")
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}: {self.resource} = {self.limit}"

    def clean(self) -> None:
        try:
            resource_classes.parse(self.resource)
        except resource_classes.UnknownResourceClass as exc:
            raise ValidationError({"resource": str(exc)}) from exc

    @property
    def resource_label(self) -> str:
        return resource_classes.parse(self.resource).label
