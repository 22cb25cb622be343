"""The bookkeeping of everything the portal reconciles onto a cluster (a tenant's objects, a
workload), in one reusable piece.

The database holds the desired state; every change to it bumps `desired_version` (inside the
transaction that made the change). A reconcile applies what the rows say and records the
outcome: on success the version it applied, when, and the objects it wrote (drift is the
cluster differing from those); on failure the cluster's error and how many tries in a row have
failed. The derived state — applying, applied, failing — has one label and one colour,
used by the model, the API, the admin and the pages alike.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import F, QuerySet
from django.utils import timezone

from .choices import ColoredChoices, colored

MAX_ERROR_LENGTH = 2000


@colored({"applying": "info", "applied": "success", "failing": "danger"})
class ReconcileState(ColoredChoices):
    APPLYING = "applying", "Applying on the cluster"
    APPLIED = "applied", "Applied on the cluster"
    FAILING = "failing", "Failing on the cluster, retrying"


class Reconciled(models.Model):
    """Desired and applied versions, the objects last applied, and the last error."""

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

    RECONCILE_FIELDS = (
        "applied_version",
        "applied_manifests",
        "applied_at",
        "reconcile_error",
        "reconcile_failed_at",
        "reconcile_failures",
    )

    class Meta:
        abstract = True

    @property
    def in_sync(self) -> bool:
        return self.applied_version >= self.desired_version and not self.reconcile_error

    @property
    def reconcile_state(self) -> ReconcileState:
        if self.reconcile_error:
            return ReconcileState.FAILING
        if self.applied_version >= self.desired_version:
            return ReconcileState.APPLIED
        return ReconcileState.APPLYING

    @property
    def reconcile_state_label(self) -> str:
        return self.reconcile_state.label

    @property
    def reconcile_state_color(self) -> str:
        return ReconcileState.color(self.reconcile_state)


def reconcile_bump(queryset: QuerySet) -> dict[int, int]:
    """The desired state of these rows changed: a new desired version each; returns them."""
    queryset.update(desired_version=F("desired_version") + 1)
    return dict(queryset.values_list("pk", "desired_version"))


def reconcile_succeeded(obj: Reconciled, *, version: int, manifests: list[dict[str, Any]]) -> bool:
    """Record a successful apply of `version` on a row locked by the caller; saves it. True when
    this was news: a newer version applied, or the first success after failures.

    What this apply wrote is what the cluster holds now, even from a late reconcile of an older
    version (the next one applies the newer again): that is what drift compares with.
    """
    news = version > obj.applied_version or bool(obj.reconcile_error)
    obj.applied_manifests = manifests
    obj.applied_version = max(obj.applied_version, version)
    obj.applied_at, obj.reconcile_error = timezone.now(), ""
    obj.reconcile_failed_at, obj.reconcile_failures = None, 0
    obj.save(update_fields=list(Reconciled.RECONCILE_FIELDS))
    return news


def reconcile_failed(obj: Reconciled, *, error: BaseException | str) -> tuple[str, bool]:
    """Record a failed apply on a row locked by the caller; saves it. Returns the message kept
    and whether it is a new error (the first, or a different one: worth an audit event)."""
    message = (str(error) or type(error).__name__)[:MAX_ERROR_LENGTH]
    new = obj.reconcile_error != message
    obj.reconcile_error, obj.reconcile_failed_at = message, timezone.now()
    obj.reconcile_failures += 1
    obj.save(update_fields=["reconcile_error", "reconcile_failed_at", "reconcile_failures"])
    return message, new
