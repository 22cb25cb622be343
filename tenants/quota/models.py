"""Quota granted to tenants, and their requests for more."""

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import models
from django.utils import timezone

from core.choices import ColoredChoices, colored
from core.state_machine import transition
from core.validators import validate_readable_text
from inventory import resource_classes

from ..access.models import Tenant


class Quota(models.Model):
    """How much of one resource class a tenant may hold at once."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quotas")
    cluster = models.ForeignKey(
        "inventory.Cluster", to_field="slug", on_delete=models.PROTECT, null=True, blank=True,
        related_name="quotas",
        help_text="The cluster it may be used on; empty: anywhere in the fleet.",
    )
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
    borrowed = models.PositiveIntegerField(
        default=0, editable=False,
        help_text="Of what is in use, how much is borrowed from the cohort, as Kueue last "
                  "reported it (GPUs and MIG instances).",
    )
    lent = models.PositiveIntegerField(
        default=0, db_default=0, editable=False,
        help_text="A dedicated tenant's reserved GPUs the cohort's shared tenants borrow now, "
                  "as Kueue last reported it in their ClusterQueues.",
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tenant__name", "resource", "cluster_id"]
        constraints = [
            # One grant per class on each cluster, and one fleet-wide ("anywhere").
            models.UniqueConstraint(
                fields=["tenant", "cluster", "resource"], name="unique_quota_cluster_resource",
                condition=models.Q(cluster__isnull=False),
            ),
            models.UniqueConstraint(
                fields=["tenant", "resource"], name="unique_quota_anywhere_resource",
                condition=models.Q(cluster__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        where = f" on {self.cluster_id}" if self.cluster_id else ""
        return f"{self.tenant.slug}: {resource_label(self.resource)}{where} = {self.limit:,}"

    @property
    def where(self) -> str:
        return cluster_label(self.cluster_id)

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
            elif name == "borrowing_limit" and self._tenant_dedicated():
                errors[name] = "A dedicated tenant never borrows: it may only lend its GPUs."
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

    def _tenant_dedicated(self) -> bool:
        try:
            return self.tenant.isolation == Tenant.Isolation.DEDICATED
        except ObjectDoesNotExist:
            return False

    @property
    def resource_label(self) -> str:
        return resource_classes.parse(self.resource).label


@colored(
    {
        "submitted": "primary",
        "approved": "info",
        "applied": "success",
        "failed": "danger",
        "rejected": "secondary",
        "withdrawn": "light",
        "expired": "dark",
    }
)
class QuotaRequestStatus(ColoredChoices):
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

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quota_requests")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="quota_requests",
    )
    cluster = models.ForeignKey(
        "inventory.Cluster", to_field="slug", on_delete=models.PROTECT, null=True, blank=True,
        related_name="quota_requests",
        help_text="Where the quota is asked for; empty: anywhere in the fleet.",
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
    # The price the tenant was shown for the increase when it asked (today's rate card then):
    # kept so the requester and the reviewer see the same figure later, whatever the card says.
    quoted_per_hour = models.DecimalField(
        max_digits=14, decimal_places=4, null=True, blank=True, editable=False,
        help_text="Price per hour of the increase, as quoted to the tenant when it asked.",
    )
    quoted_per_month = models.DecimalField(
        max_digits=14, decimal_places=2, null=True, blank=True, editable=False,
        help_text="The same per 30-day month.",
    )
    quoted_currency = models.CharField(max_length=3, blank=True, editable=False)
    quote_complete = models.BooleanField(
        default=True, editable=False,
        help_text="False when part of the increase had no price on the rate card.",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=QuotaRequestStatus.values),
                name="quota_request_status_known",
            )
        ]
        indexes = [
            models.Index(fields=["tenant", "-created_at"]),
            # The review queue (portal, admin and API): the few requests awaiting a decision,
            # oldest first, without walking every request ever made by date.
            models.Index(fields=["created_at", "id"], name="quota_request_awaiting_idx",
                         condition=models.Q(status="submitted")),
        ]

    def __str__(self) -> str:
        # The number alone: a request's name must not load its tenant (the review queue names
        # each row's checkbox after it, 50 to 400 rows a page).
        return f"Quota request #{self.pk}"

    def move_to(self, target: str, **changes) -> None:
        """Move to `target` or raise InvalidTransition (also when another worker moved first)."""
        transition(self, target=target, transitions=self.TRANSITIONS, **changes)

    @property
    def where(self) -> str:
        return cluster_label(self.cluster_id)

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN

    @property
    def status_color(self) -> str:
        return QuotaRequestStatus.color(self.status)

    @property
    def quoted_per_hour_shown(self) -> str:
        """To the cent, or to 4 places where a cent would hide it (as the quote showed it)."""
        if self.quoted_per_hour is None:
            return ""
        whole, _, places = f"{self.quoted_per_hour:,.4f}".partition(".")
        return f"{whole}.{places.rstrip('0').ljust(2, '0')}"


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
        return resource_label(self.resource)

    @property
    def granted(self) -> int:
        return self.amount if self.approved_amount is None else self.approved_amount


def resource_label(resource: str) -> str:
    """A request line's class as people read it; the key itself if the vocabulary lost it."""
    try:
        return resource_classes.parse(resource).label
    except resource_classes.UnknownResourceClass:
        return resource


ANYWHERE = "Anywhere"


def cluster_label(cluster: str | None) -> str:
    """Where a grant or request applies, as people read it: a cluster's slug, or anywhere."""
    return cluster or ANYWHERE
