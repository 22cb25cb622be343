"""How healthy the fleet is: health events, and the runs of the jobs that watch it."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.choices import ColoredChoices, colored
from core.validators import validate_readable_text

from .device import GPU
from .node import Node


@colored({"info": "info", "warning": "warning", "critical": "danger"})
class Severity(ColoredChoices):
    INFO = "info", "Info"
    WARNING = "warning", "Warning"
    CRITICAL = "critical", "Critical"


SEVERITY_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}


class HealthEvent(models.Model):
    """A fault seen on a node or one of its GPUs; open until resolved."""

    class Kind(models.TextChoices):
        XID = "xid", "XID error"
        ECC_DBE = "ecc-dbe", "Double-bit ECC errors"
        RETIRED_PAGES = "retired-pages", "Retired memory pages"
        ROW_REMAP_FAILURE = "row-remap-failure", "Row remapping failed"
        THERMAL = "thermal-violation", "Thermal throttling"
        POWER = "power-violation", "Power throttling"
        NVLINK = "nvlink-errors", "NVLink errors"
        NOT_READY = "node-not-ready", "Kubernetes node not ready"
        MANUAL = "manual", "Reported by an admin"

    class Remediation(models.TextChoices):
        NONE = "none", "No action"
        CORDON = "cordon", "Cordon"
        DRAIN = "drain", "Drain to maintenance"

    class Source(models.TextChoices):
        DCGM = "dcgm", "DCGM via Prometheus"
        KUBERNETES = "kubernetes", "Kubernetes"
        ADMIN = "admin", "Admin"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="health_events")
    gpu = models.ForeignKey(
        GPU, on_delete=models.SET_NULL, null=True, blank=True, related_name="health_events"
    )
    kind = models.CharField(max_length=30, choices=Kind.choices)
    # What the event is about, so that one fault stays one open event: "gpu:3" or "node".
    subject = models.CharField(max_length=100, default="node")
    severity = models.CharField(max_length=10, choices=Severity.choices)
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.DCGM)
    value = models.FloatField(null=True, blank=True)
    detail = models.CharField(max_length=300, blank=True)
    opened_at = models.DateTimeField(default=timezone.now, db_index=True)
    last_seen_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    resolution = models.CharField(max_length=300, blank=True, validators=[validate_readable_text])
    remediation = models.CharField(
        max_length=10, choices=Remediation.choices, default=Remediation.NONE
    )
    notified_tenants = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            # Ingestion runs every minute: a fault still visible updates its open event.
            models.UniqueConstraint(
                fields=["node", "kind", "subject"],
                condition=Q(resolved_at__isnull=True),
                name="one_open_event_per_fault",
            )
        ]
        indexes = [models.Index(fields=["node", "resolved_at"])]

    def __str__(self) -> str:
        return f"{self.node} {self.get_kind_display()} ({self.severity})"

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None

    @property
    def severity_color(self) -> str:
        return Severity.color(self.severity)


class InventoryRun(models.Model):
    """One run of the cluster sync or the health ingestion: what it found, or why it failed."""

    class Kind(models.TextChoices):
        CLUSTER_SYNC = "cluster-sync", "Cluster sync"
        HEALTH_INGEST = "health-ingest", "Health ingestion"
        IMPORT = "import", "Import"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    # The cluster a sync read (none: a run over the whole fleet).
    cluster = models.ForeignKey(
        "inventory.Cluster", to_field="slug", on_delete=models.SET_NULL, null=True, blank=True,
        related_name="runs",
    )
    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        outcome = "ok" if self.ok else "failed"
        return f"{self.get_kind_display()} {self.started_at:%Y-%m-%d %H:%M} {outcome}"


# Module-level names for the API schema's enum names (portal.settings ENUM_NAME_OVERRIDES).
HealthEventKind = HealthEvent.Kind
HealthEventSource = HealthEvent.Source
HealthEventRemediation = HealthEvent.Remediation
