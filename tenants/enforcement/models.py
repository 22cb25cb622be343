"""Where a tenant's objects are: one row per cluster it is on, reconciled independently."""

from __future__ import annotations

from django.db import models

from core.reconcile import ReconcileState

from ..access.models import Tenant


class TenantCluster(models.Model):
    """A tenant's namespace, quota objects and queues on one cluster, as last applied there.

    The desired version stays on the tenant (one change to its quota is one new version); each
    cluster records the version it last applied, the objects it wrote, its own error, and the
    usage it reported (per resource class: in use, borrowed, lent)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="clusters")
    cluster = models.ForeignKey(
        "inventory.Cluster",
        to_field="slug",
        on_delete=models.CASCADE,
        related_name="tenant_presences",
    )
    applied_version = models.PositiveBigIntegerField(default=0, editable=False)
    applied_at = models.DateTimeField(null=True, blank=True, editable=False)
    applied_manifests = models.JSONField(default=list, blank=True, editable=False)
    reconcile_error = models.TextField(blank=True, editable=False)
    reconcile_failed_at = models.DateTimeField(null=True, blank=True, editable=False)
    reconcile_failures = models.PositiveIntegerField(default=0, editable=False)
    # {resource: {"in_use": n, "borrowed": n, "lent": n}} as the cluster last reported it.
    observed = models.JSONField(default=dict, blank=True, editable=False)

    class Meta:
        ordering = ["tenant_id", "cluster_id"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "cluster"], name="unique_tenant_cluster")
        ]

    def __str__(self) -> str:
        return f"tenant {self.tenant_id} on {self.cluster_id}"

    def state(self, desired_version: int) -> ReconcileState:
        if self.reconcile_error:
            return ReconcileState.FAILING
        if self.applied_version >= desired_version:
            return ReconcileState.APPLIED
        return ReconcileState.APPLYING
