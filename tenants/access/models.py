"""Tenants, who belongs to them, and who holds a platform-wide role."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from core.reconcile import Reconciled
from core.validators import validate_dns1123_label, validate_readable_name


class Source(models.TextChoices):
    LOCAL = "local", "Granted in the portal"
    KEYCLOAK = "keycloak", "From Keycloak"


class Tenant(Reconciled):
    """A team that shares the fleet; owns one namespace on the cluster (reconciled onto it)."""

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
    cohort = models.CharField(
        "Kueue cohort",
        max_length=63,
        blank=True,
        validators=[validate_dns1123_label],
        help_text=(
            "Shared tenants in one cohort lend each other quota they leave idle. A dedicated "
            "tenant's reserved GPUs are lent to its cohort only if its owners opt in."
        ),
    )
    lends_reserved_gpus = models.BooleanField(
        "Lend idle reserved GPUs",
        default=False,
        db_default=False,  # rows written by code that predates it (an older migration state)
        help_text=(
            "Dedicated tenants only: the shared tenants of its cohort may borrow the reserved "
            "GPUs it leaves idle, and give them back (preempted) as soon as it needs them. "
            "Nothing it runs is ever preempted for another tenant."
        ),
    )
    custom_notebook_images = models.BooleanField(
        "May run its own notebook images",
        default=False,
        db_default=False,
        help_text=(
            "Its members may launch notebooks from any image, not only the admins\u2019 list."
        ),
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
    class Meta:
        ordering = ["name"]
        indexes = [
            # The admin's list in its order (the name, then Django's -pk tie-break): its first
            # page reads 50 index entries instead of sorting every tenant.
            models.Index(fields=["name", "-id"], name="tenant_name_list_idx"),
            # The cohorts there are, for the admin's cohort filter: an index probe each
            # (core.admin_filters.DistinctValuesListFilter), not a scan of every tenant.
            models.Index(fields=["cohort"], name="tenant_cohort_idx"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.lends_reserved_gpus and self.isolation != self.Isolation.DEDICATED:
            raise ValidationError(
                {"lends_reserved_gpus": "Only a dedicated tenant has reserved GPUs to lend."}
            )

    @property
    def borrows_from_cohort(self) -> bool:
        """A shared tenant in a cohort borrows what the others leave idle."""
        return bool(self.cohort) and self.isolation == self.Isolation.SHARED

    @property
    def lends_to_cohort(self) -> bool:
        """A dedicated tenant lends its idle reserved GPUs to its cohort only when its owners
        opted in; it never borrows, so nothing it runs is reclaimed."""
        return (bool(self.cohort) and self.isolation == self.Isolation.DEDICATED
                and self.lends_reserved_gpus)

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




class ServiceAccount(models.Model):
    """A non-human member of one tenant (CI, a scheduler): a user of its own, with no password
    and no Keycloak identity, holding one membership (member or viewer) in its tenant."""

    ROLES = [(Membership.Role.MEMBER.value, "Member"), (Membership.Role.VIEWER.value, "Viewer")]

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="service_accounts")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="service_account"
    )
    name = models.CharField(max_length=63, validators=[validate_dns1123_label])
    role = models.CharField(max_length=10, choices=ROLES, default=Membership.Role.MEMBER)
    # What a Keycloak client-credentials token of `keycloak_client_id` may do (core.api.scopes).
    scopes = models.JSONField(default=list, blank=True)
    keycloak_client_id = models.CharField(
        max_length=255, unique=True, null=True, blank=True,
        help_text="The Keycloak client whose client-credentials tokens act as this account.",
    )
    # The last request made with one of that client's tokens (at most once a minute).
    keycloak_last_used_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    disabled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="unique_service_account_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} (service account of {self.tenant_id})"

    @property
    def username(self) -> str:
        return service_account_username(tenant_slug=self.tenant.slug, name=self.name)


def service_account_username(*, tenant_slug: str, name: str) -> str:
    """The user name behind a service account; dots, which tenant slugs and DNS labels never
    hold, keep it apart from any slug or label."""
    return f"sa.{tenant_slug}.{name}"
