"""Who uses the fleet and what they may use."""

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from inventory import resource_classes
from portal.state_machine import transition
from portal.validators import validate_readable_name, validate_readable_text

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
    name = models.CharField(max_length=100, validators=[validate_readable_name])
    cost_center = models.CharField(max_length=50, blank=True, validators=[validate_readable_name])
    isolation = models.CharField(max_length=20, choices=Isolation.choices, default=Isolation.SHARED)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    monthly_budget = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        default=Decimal("0"),
        validators=[MinValueValidator(Decimal("0"))],
        help_text="0 means no budget set.",
    )
    cohort = models.CharField(
        "Kueue cohort",
        max_length=63,
        blank=True,
        validators=[validate_dns1123_label],
        help_text="Shared tenants in one cohort lend each other quota they leave idle.",
    )
    keycloak_group = models.CharField(
        max_length=200,
        blank=True,
        help_text=(
            "Extra Keycloak group given edit rights in the namespace, besides the tenant's "
            "owner and member groups."
        ),
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Level-triggered enforcement: every change to what the cluster should hold bumps
    # desired_version; a reconcile that succeeds records the version it applied.
    desired_version = models.PositiveBigIntegerField(default=1, editable=False)
    applied_version = models.PositiveBigIntegerField(default=0, editable=False)
    applied_at = models.DateTimeField(
        "applied on the cluster at", null=True, blank=True, editable=False
    )
    # The objects the last successful apply wrote: drift is the cluster differing from these.
    applied_manifests = models.JSONField(default=list, blank=True, editable=False)
    reconcile_error = models.TextField(blank=True, editable=False)
    reconcile_failed_at = models.DateTimeField(null=True, blank=True, editable=False)
    reconcile_failures = models.PositiveIntegerField(
        default=0, editable=False, help_text="Failed reconciles since the last success."
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.cohort and self.isolation == self.Isolation.DEDICATED:
            raise ValidationError(
                {"cohort": "Dedicated tenants share no quota: only shared tenants join a cohort."}
            )

    @property
    def namespace(self) -> str:
        return f"tenant-{self.slug}"[:63]

    def keycloak_groups(self, *, prefix: str) -> dict[str, list[str]]:
        """Keycloak group paths that may edit and view the tenant's namespace.

        The same `<prefix><slug>/<role>` paths the sign-in maps to memberships, so Keycloak
        decides both who is a member in the portal and who may use the namespace.
        """
        base = f"{prefix.rstrip('/')}/{self.slug}"
        edit = [f"{base}/owner", f"{base}/member"]
        if self.keycloak_group:
            edit.append(self.keycloak_group)
        return {"edit": edit, "view": [f"{base}/viewer"]}

    @property
    def in_sync(self) -> bool:
        return self.applied_version >= self.desired_version and not self.reconcile_error


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
    borrowing_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Most this tenant may borrow from its cohort (empty: no limit). GPUs only.",
    )
    lending_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Most of its idle quota others in the cohort may borrow (empty: all). GPUs only.",
    )
    in_use = models.PositiveIntegerField(
        default=0, editable=False, help_text="In use on the cluster, as last observed."
    )
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
            resource_class = resource_classes.parse(self.resource)
        except resource_classes.UnknownResourceClass as exc:
            raise ValidationError({"resource": str(exc)}) from exc
        limits = {"borrowing_limit": self.borrowing_limit, "lending_limit": self.lending_limit}
        errors = {}
        for name, value in limits.items():
            if value is None:
                continue
            if resource_class.kind not in {"gpu", "mig"}:
                errors[name] = "Borrowing and lending apply to GPU and MIG quota only."
            elif not self._tenant_cohort():
                errors[name] = "The tenant is in no cohort: there is nobody to borrow from."
        lends_too_much = self.lending_limit is not None and self.lending_limit > (self.limit or 0)
        if lends_too_much and "lending_limit" not in errors:
            errors["lending_limit"] = "Cannot lend more than the quota itself."
        if errors:
            raise ValidationError(errors)

    def _tenant_cohort(self) -> str:
        try:
            return self.tenant.cohort
        except ObjectDoesNotExist:
            return ""

    @property
    def resource_label(self) -> str:
        return resource_classes.parse(self.resource).label


class QuotaRequestStatus(models.TextChoices):
    SUBMITTED = "submitted", "Submitted"
    APPROVED = "approved", "Approved, applying"
    APPLIED = "applied", "Applied"
    FAILED = "failed", "Failed on the cluster, retrying"
    REJECTED = "rejected", "Rejected"
    WITHDRAWN = "withdrawn", "Withdrawn"
    EXPIRED = "expired", "Ended"


class QuotaRequest(models.Model):
    """A tenant's ask for more quota, and the platform's decision on it."""

    Status = QuotaRequestStatus

    # The one place the request's moves are listed.
    TRANSITIONS: dict[str, frozenset[str]] = {
        Status.SUBMITTED: frozenset({Status.APPROVED, Status.REJECTED, Status.WITHDRAWN}),
        Status.APPROVED: frozenset({Status.APPLIED, Status.FAILED}),
        Status.FAILED: frozenset({Status.APPLIED}),
        Status.APPLIED: frozenset({Status.EXPIRED}),
        Status.REJECTED: frozenset(),
        Status.WITHDRAWN: frozenset(),
        Status.EXPIRED: frozenset(),
    }
    OPEN = (Status.SUBMITTED, Status.APPROVED, Status.FAILED)
    COLORS = {
        Status.SUBMITTED: "primary",
        Status.APPROVED: "info",
        Status.APPLIED: "success",
        Status.FAILED: "danger",
        Status.REJECTED: "secondary",
        Status.WITHDRAWN: "light",
        Status.EXPIRED: "dark",
    }

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quota_requests")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="quota_requests",
    )
    justification = models.TextField(validators=[validate_readable_text])
    ends_on = models.DateField(
        null=True, blank=True, help_text="Last day of a temporary grant; empty means permanent."
    )
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.SUBMITTED, db_index=True
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="quota_decisions",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(
        blank=True, help_text="The reason, for a rejection.", validators=[validate_readable_text]
    )
    # The tenant's desired_version that first includes this grant: applied once the cluster is.
    tenant_version = models.PositiveBigIntegerField(null=True, blank=True)
    applied_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Reconciles that carried it.")
    reminded_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=QuotaRequestStatus.values),
                name="quota_request_status_known",
            )
        ]
        indexes = [models.Index(fields=["tenant", "-created_at"])]

    def __str__(self) -> str:
        return f"Quota request #{self.pk} ({self.tenant.slug})"

    def move_to(self, target: str, **changes) -> None:
        """Move to `target` or raise InvalidTransition (also when another worker moved first)."""
        transition(self, target=target, transitions=self.TRANSITIONS, **changes)

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN

    @property
    def status_color(self) -> str:
        return self.COLORS.get(self.status, "secondary")


class QuotaRequestLine(models.Model):
    """One resource class a quota request asks more of."""

    request = models.ForeignKey(QuotaRequest, on_delete=models.CASCADE, related_name="lines")
    resource = models.CharField(max_length=100)
    amount = models.PositiveIntegerField(help_text="How much more is asked for.")
    approved_amount = models.PositiveIntegerField(
        null=True, blank=True, help_text="How much more was granted (may differ from the ask)."
    )
    limit_before = models.PositiveIntegerField(null=True, blank=True)
    limit_after = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["request_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["request", "resource"], name="unique_quota_request_resource"
            ),
            models.CheckConstraint(
                condition=models.Q(amount__gt=0), name="quota_request_amount_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"+{self.amount} {self.resource}"

    @property
    def resource_label(self) -> str:
        try:
            return resource_classes.parse(self.resource).label
        except resource_classes.UnknownResourceClass:
            return self.resource

    @property
    def granted(self) -> int:
        return self.amount if self.approved_amount is None else self.approved_amount
