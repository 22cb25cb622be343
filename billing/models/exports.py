"""Exports of the invoice list written by a worker."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.choices import ColoredChoices, colored


@colored({"queued": "secondary", "running": "info", "ready": "success", "failed": "danger"})
class ExportStatus(ColoredChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Being written"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class InvoiceExport(models.Model):
    """A list of invoices too long to write while its requester waits (see
    `billing.services.invoice_exports`): recorded with the filters that select it, written by
    a Celery task into `body`, downloaded by the person who asked for it, and deleted some
    days later."""

    Status = ExportStatus

    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invoice_exports"
    )
    fmt = models.CharField(max_length=4, choices=[("csv", "CSV"), ("xlsx", "XLSX")])
    # The invoice list's query string, as lists of values per name (without its page).
    filters = models.JSONField(default=dict, blank=True)
    invoice_count = models.PositiveIntegerField(help_text="Selected when it was asked for.")
    status = models.CharField(max_length=10, choices=ExportStatus.choices, default="queued")
    error = models.CharField(max_length=500, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    body = models.BinaryField(null=True, blank=True, editable=False)
    size = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=ExportStatus.values), name="invoice_export_status"
            ),
        ]
        # The sweep's: exports still to write, and those old enough to delete.
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"{self.filename}.{self.fmt} ({self.status})"

    @property
    def filename(self) -> str:
        """The download's name, without its extension."""
        return f"invoices-{self.created_at:%Y-%m-%d}-{self.pk}"

    @property
    def in_progress(self) -> bool:
        return self.status in (ExportStatus.QUEUED, ExportStatus.RUNNING)

    @property
    def status_color(self) -> str:
        return ExportStatus.color(self.status)
