"""Usage per hour and per day, and the metering's own records: windows, cross-checks,
flags."""

from __future__ import annotations

from datetime import date

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from core.choices import ColoredChoices, colored
from inventory.models.cluster import DEFAULT_CLUSTER
from tenants.models import Tenant, Workload


class UsageRecord(models.Model):
    """Unit-seconds of one resource class that one tenant held or used within one UTC hour.

    `allocated` rows come from workload histories (one per workload); `measured` rows from
    DCGM series in Prometheus (one per host the tenant's GPUs were seen on, with
    `busy_seconds` weighted by utilization). Keys are unique, so writing a window again
    replaces its rows instead of adding to them.
    """

    class Source(models.TextChoices):
        ALLOCATED = "allocated", "Allocated (reserved)"
        MEASURED = "measured", "Measured (DCGM)"

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="usage_records")
    workload = models.ForeignKey(
        Workload, null=True, blank=True, on_delete=models.PROTECT, related_name="usage_records"
    )
    hostname = models.CharField(max_length=253, blank=True)
    # Who launched the workload and the label it was launched with, copied when metered (as
    # the cluster is), so that cost is broken down by person and label from the records alone.
    # Measured (per host) records have neither.
    launched_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+", db_index=False,
    )
    label = models.CharField(max_length=63, blank=True, default="", db_default="")
    # The cluster's slug, copied when metered (a workload's, a measured host's node's): kept
    # as text, so that a record outlives what it names. Resource classes are fleet-wide:
    # prices and invoices do not depend on it.
    cluster = models.CharField(max_length=40, default=DEFAULT_CLUSTER, db_default=DEFAULT_CLUSTER)
    source = models.CharField(max_length=10, choices=Source.choices)
    resource = models.CharField("resource class", max_length=100)
    hour = models.DateTimeField(help_text="The UTC hour the seconds fall in (its start).")
    unit_seconds = models.BigIntegerField(validators=[MinValueValidator(0)])
    busy_seconds = models.BigIntegerField(
        default=0, help_text="Measured only: GPU-seconds weighted by utilization."
    )
    metered_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["hour", "tenant_id", "resource"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "workload", "resource", "hour", "source"],
                condition=models.Q(source="allocated"),
                name="unique_allocated_usage",
            ),
            models.UniqueConstraint(
                fields=["tenant", "hostname", "resource", "hour", "source"],
                condition=models.Q(source="measured"),
                name="unique_measured_usage",
            ),
            models.CheckConstraint(
                condition=models.Q(unit_seconds__gte=0) & models.Q(busy_seconds__gte=0),
                name="usage_seconds_not_negative",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "source", "hour"]),
            models.Index(fields=["source", "hour"]),
            # Deleting a user sets its records' launcher to null: without this, a scan of
            # every record. Partial: measured records and most old ones have none.
            models.Index(fields=["launched_by"], condition=models.Q(launched_by__isnull=False),
                         name="usage_launched_by_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id} {self.resource} {self.hour:%Y-%m-%d %H}:00 {self.source}"


class UsageDaily(models.Model):
    """Usage records summed per UTC day, tenant, resource class and source: what the usage
    explorer sums instead of a range's hourly records (about 24 times fewer rows per tenant
    and class, far more per workload).

    Kept by database triggers on `UsageRecord` (migration 0002), so that every write counts,
    whoever makes it: metering (COPY, delete and insert again), the bench's data set, the
    admin, tests. On PostgreSQL they are statement-level triggers that add (insert) or
    subtract (delete) each statement's rows grouped per key, so re-metering a window replaces
    its sums exactly as it replaces its records. `records` counts the records summed; a key
    whose records are all gone is deleted with them, so rows here are the groups of the
    records' own GROUP BY.
    """

    day = models.DateField(help_text="The UTC day of the records' hours.")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=10, choices=UsageRecord.Source.choices)
    resource = models.CharField("resource class", max_length=100)
    records = models.BigIntegerField()
    unit_seconds = models.BigIntegerField()
    busy_seconds = models.BigIntegerField()

    class Meta:
        verbose_name_plural = "usage per day"
        constraints = [
            models.UniqueConstraint(
                fields=["day", "tenant", "resource", "source"], name="one_usage_daily_per_key"
            )
        ]
        indexes = [models.Index(fields=["source", "day"])]

    def __str__(self) -> str:
        return f"{self.tenant_id} {self.resource} {self.day} {self.source}"


class UsageStamp(models.Model):
    """Writes counted per UTC day, so that the usage explorer's summaries may be cached under
    the sum of their range's counts: it changes with every committed write to the range.

    Counted by database triggers (migration 0003), whoever writes: a statement that inserts,
    updates or deletes usage records, metering windows or OpenCost cross-checks counts one
    change on each UTC day its rows' hours fall on; renaming a tenant (or changing its slug or
    cost center), adding or removing one counts one on `ALL_DAYS`, which every range includes.
    A statement appends a row per day rather than updating one, so that writers never wait for
    each other here, and folds the day's earlier rows into it (a day keeps a row or two). The
    sum only ever grows, so it never comes back to a value it had.
    """

    ALL_DAYS = date(1, 1, 1)

    day = models.DateField(db_index=True)
    changes = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.day} {self.changes}"


@colored({"pending": "secondary", "done": "success", "gap": "danger"})
class WindowStatus(ColoredChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Metered"
    GAP = "gap", "Gap: source unavailable, retrying"


class MeteringWindow(models.Model):
    """One hour of one source's metering: done, or a gap that the sweep runs again."""

    Status = WindowStatus

    source = models.CharField(max_length=10, choices=UsageRecord.Source.choices)
    hour = models.DateTimeField()
    status = models.CharField(max_length=10, choices=WindowStatus.choices, default="pending")
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    records = models.PositiveIntegerField(default=0)
    unit_seconds = models.BigIntegerField(default=0)
    metered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-hour", "source"]
        constraints = [
            models.UniqueConstraint(fields=["source", "hour"], name="one_window_per_source_hour")
        ]
        indexes = [models.Index(fields=["status", "hour"])]

    def __str__(self) -> str:
        return f"{self.source} {self.hour:%Y-%m-%d %H}:00 {self.status}"

    @property
    def status_color(self) -> str:
        return WindowStatus.color(self.status)


class CrossCheck(models.Model):
    """Allocated GPU-seconds against OpenCost's `container_gpu_allocation`, per tenant-hour;
    `flagged` when they differ by more than the threshold (admins look into it)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="cross_checks")
    hour = models.DateTimeField()
    portal_gpu_seconds = models.BigIntegerField()
    opencost_gpu_seconds = models.BigIntegerField()
    difference_percent = models.DecimalField(max_digits=9, decimal_places=2)
    flagged = models.BooleanField(default=False)
    checked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-hour", "tenant__name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "hour"], name="one_cross_check_per_hour")
        ]
        indexes = [models.Index(fields=["flagged", "hour"])]

    def __str__(self) -> str:
        return f"{self.tenant_id} {self.hour:%Y-%m-%d %H}:00 {self.difference_percent} %"


class MeteringFlag(models.Model):
    """GPU-seconds above what a host's GPUs allow, capped when stored (measured usage) or
    credited (downtime credit): admins look into the source that over-reported."""

    class Kind(models.TextChoices):
        MEASURED_CAPPED = "measured_capped", "Measured usage above the host's GPUs"
        CREDIT_CAPPED = "credit_capped", "Downtime credit above the host's GPUs x outage"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    hour = models.DateTimeField()
    hostname = models.CharField(max_length=253)
    # The tenant whose invoice a capped credit is on (a measured cap is the host's, all tenants).
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="metering_flags"
    )
    invoice_period = models.DateTimeField(null=True, blank=True)
    gpus = models.PositiveIntegerField(help_text="The host's GPUs in the inventory.")
    capacity_seconds = models.BigIntegerField(help_text="GPU-seconds its GPUs allow.")
    reported_seconds = models.BigIntegerField(help_text="GPU-seconds reported (or credited).")
    kept_seconds = models.BigIntegerField(help_text="GPU-seconds kept after the cap.")
    flagged_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-hour", "hostname"]
        indexes = [models.Index(fields=["kind", "hour"]), models.Index(fields=["hour"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.hostname} {self.hour:%Y-%m-%d %H}:00"
