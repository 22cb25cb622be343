"""What the fleet costs: billing accounts, rate cards, usage, metering windows, invoices.

Money is Decimal and rounded once, at the invoice line (see `billing.calculations`). Usage
ingestion is idempotent: every usage record has a unique key (tenant, workload or host,
resource class, hour, source), so metering a window twice never counts twice. An issued
invoice never changes: its row refuses every change but the lifecycle's own fields, and its
lines refuse every change at all, through the model and its querysets alike.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from portal.choices import ColoredChoices, colored
from portal.errors import RuleViolation
from portal.state_machine import transition
from tenants.models import Tenant, Workload

MONEY = {"max_digits": 14, "decimal_places": 2}
PRICE = {"max_digits": 14, "decimal_places": 6}
QUANTITY = {"max_digits": 20, "decimal_places": 6}
PERCENT = {
    "max_digits": 5,
    "decimal_places": 2,
    "validators": [MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("100"))],
}


class ImmutableInvoiceError(RuleViolation):
    """An issued (paid, void) invoice or one of its lines was about to change."""


class BillingAccount(models.Model):
    """How one tenant is billed: its monthly budget and an optional discount."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="billing_account")
    monthly_budget = models.DecimalField(
        **MONEY,
        default=Decimal("0"),
        validators=[MinValueValidator(Decimal("0"))],
        help_text="0 means no budget set: no budget alerts.",
    )
    discount_percent = models.DecimalField(
        **PERCENT, default=Decimal("0"), help_text="Taken off every invoice's subtotal."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant__name"]

    def __str__(self) -> str:
        return f"Billing of {self.tenant}"


class BudgetAlert(models.Model):
    """A budget threshold (80 or 100 %) a tenant was told about, once per month."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="budget_alerts")
    month = models.DateField(help_text="The first day of the month alerted.")
    threshold = models.PositiveSmallIntegerField()
    spent = models.DecimalField(**MONEY)
    budget = models.DecimalField(**MONEY)
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-month", "tenant__name", "threshold"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "month", "threshold"], name="one_budget_alert_per_month"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant} reached {self.threshold} % in {self.month:%Y-%m}"


class Rate(models.Model):
    """The price of one unit-hour (or unit-month) of a resource class over a period."""

    class Unit(models.TextChoices):
        HOUR = "hour", "per unit-hour"
        MONTH = "month", "per unit-month"

    resource = models.CharField("resource class", max_length=100, db_index=True)
    unit_price = models.DecimalField(**PRICE, validators=[MinValueValidator(Decimal("0"))])
    unit = models.CharField(max_length=10, choices=Unit.choices, default=Unit.HOUR)
    valid_from = models.DateTimeField(help_text="On a whole UTC hour.")
    valid_to = models.DateTimeField(
        null=True, blank=True, help_text="Exclusive, on a whole UTC hour; empty: open-ended."
    )
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["resource", "valid_from"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(unit_price__gte=0), name="rate_price_not_negative"
            ),
            models.CheckConstraint(
                condition=models.Q(valid_to__isnull=True)
                | models.Q(valid_to__gt=models.F("valid_from")),
                name="rate_period_ends_after_start",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.resource} at {self.unit_price_shown} {self.get_unit_display()}"

    @property
    def unit_price_shown(self) -> str:
        """The price with the places it has (0.0045, 2.80), never padded to the column's 6."""
        whole, _, places = f"{Decimal(self.unit_price):,.6f}".partition(".")
        return f"{whole}.{places.rstrip('0').ljust(2, '0')}"


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


@colored({"draft": "secondary", "issued": "primary", "paid": "success", "void": "dark"})
class InvoiceStatus(ColoredChoices):
    DRAFT = "draft", "Draft"
    ISSUED = "issued", "Issued"
    PAID = "paid", "Paid"
    VOID = "void", "Void"


INVOICE_TRANSITIONS: dict[str, frozenset[str]] = {
    InvoiceStatus.DRAFT: frozenset({InvoiceStatus.ISSUED}),
    InvoiceStatus.ISSUED: frozenset({InvoiceStatus.PAID, InvoiceStatus.VOID}),
    InvoiceStatus.PAID: frozenset(),
    InvoiceStatus.VOID: frozenset(),
}
# What may still change on an invoice once issued: its lifecycle, nothing it says.
# Settlement (credited, paid) is part of the lifecycle: credit notes and payments add to it.
LIFECYCLE_FIELDS = frozenset(
    {"status", "paid_at", "paid_by", "payment_reference", "voided_at", "voided_by", "void_reason",
     "amount_credited", "amount_paid"}
)


class InvoiceQuerySet(models.QuerySet):
    def update(self, **kwargs):
        frozen = set(kwargs) - LIFECYCLE_FIELDS
        if frozen and self.exclude(status=InvoiceStatus.DRAFT).exists():
            raise ImmutableInvoiceError(
                f"An issued invoice never changes ({', '.join(sorted(frozen))})."
            )
        return super().update(**kwargs)

    def delete(self):
        if self.exclude(status=InvoiceStatus.DRAFT).exists():
            raise ImmutableInvoiceError("Only a draft invoice may be deleted.")
        return super().delete()

    def open_for_period(self):
        return self.exclude(status=InvoiceStatus.VOID)


class Invoice(models.Model):
    """One tenant's bill for one calendar month: a draft recomputed freely until issued."""

    Status = InvoiceStatus

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="invoices")
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    status = models.CharField(max_length=10, choices=InvoiceStatus.choices, default="draft")
    # Who is billed, as it stood when the invoice was last computed (frozen once issued).
    tenant_name = models.CharField(max_length=100)
    cost_center = models.CharField(max_length=50, blank=True)
    currency = models.CharField(max_length=3)
    discount_percent = models.DecimalField(**PERCENT, default=Decimal("0"))
    tax_percent = models.DecimalField(
        max_digits=5, decimal_places=2, null=True, blank=True,
        validators=[MinValueValidator(Decimal("0"))],
    )
    subtotal = models.DecimalField(**MONEY, default=Decimal("0"))
    discount = models.DecimalField(**MONEY, default=Decimal("0"))
    tax = models.DecimalField(**MONEY, default=Decimal("0"))
    total = models.DecimalField(**MONEY, default=Decimal("0"))
    # What its credit notes and payments add up to, kept by the services that record them
    # (under the invoice's row lock): every list, roll-up and export reads the net from here.
    amount_credited = models.DecimalField(**MONEY, default=Decimal("0"))
    amount_paid = models.DecimalField(**MONEY, default=Decimal("0"))
    # Usage that no rate prices: shown on the invoice and to finance, never billed at zero.
    unpriced = models.JSONField(default=list, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    number = models.CharField(max_length=20, null=True, blank=True, unique=True)
    issue_date = models.DateField(null=True, blank=True)
    due_date = models.DateField(null=True, blank=True)
    issued_at = models.DateTimeField(null=True, blank=True)
    issued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    paid_at = models.DateTimeField(null=True, blank=True)
    paid_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    payment_reference = models.CharField(max_length=100, blank=True)
    voided_at = models.DateTimeField(null=True, blank=True)
    voided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    void_reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = InvoiceQuerySet.as_manager()

    class Meta:
        ordering = ["-period_start", "tenant_name", "-id"]
        constraints = [
            # One live invoice per tenant and month; a void one may be replaced.
            models.UniqueConstraint(
                fields=["tenant", "period_start"],
                condition=~models.Q(status="void"),
                name="one_live_invoice_per_tenant_month",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=InvoiceStatus.values), name="invoice_status_known"
            ),
            models.CheckConstraint(
                condition=models.Q(status="draft") | models.Q(number__isnull=False),
                name="issued_invoice_has_number",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "period_start"]),
            models.Index(fields=["period_start", "tenant"]),
            # The list's default order, read a page at a time without sorting every invoice.
            models.Index(
                models.F("period_start").desc(), "tenant_name", models.F("id").desc(),
                name="billing_invoice_list_order",
            ),
            # The cost center filter and its select's few distinct values (read in order).
            models.Index(fields=["cost_center"], name="billing_invoice_cost_center"),
        ]

    def __str__(self) -> str:
        return self.number or f"Draft {self.tenant_name} {self.period_start:%Y-%m}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            stored = Invoice.objects.filter(pk=self.pk).values_list("status", flat=True).first()
            if stored not in (None, InvoiceStatus.DRAFT):
                raise ImmutableInvoiceError(
                    f"Invoice {self} is {stored}: it never changes. Issue a credit note."
                )
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self.status != InvoiceStatus.DRAFT:
            raise ImmutableInvoiceError("Only a draft invoice may be deleted.")
        return super().delete(*args, **kwargs)

    def move_to(self, target: str, **changes) -> None:
        transition(self, target=target, transitions=INVOICE_TRANSITIONS, **changes)

    @property
    def status_color(self) -> str:
        return InvoiceStatus.color(self.status)

    @property
    def is_draft(self) -> bool:
        return self.status == InvoiceStatus.DRAFT

    @property
    def month_label(self) -> str:
        return f"{self.period_start:%B %Y}"

    @property
    def net_total(self) -> Decimal:
        """The total less its credit notes: what the tenant owes for the month."""
        return self.total - self.amount_credited

    @property
    def balance_due(self) -> Decimal:
        """What is left to pay; negative when over-settled (a refund is owed)."""
        return self.total - self.amount_credited - self.amount_paid

    @property
    def over_settled(self) -> Decimal:
        """How much credits and payments exceed the total (0 when they do not)."""
        return max(-self.balance_due, Decimal("0"))


class InvoiceSummary(models.Model):
    """Every invoice counted and summed per status: what the finance list's totals read while
    it shows every invoice (or only some statuses), instead of summing thousands of rows.

    Kept by database triggers on `Invoice` (migration 0003), so that every write counts,
    whoever makes it (the services, the admin, the bench's data set, tests): statement-level
    on PostgreSQL, adding each statement's new rows and subtracting its old ones per status.
    """

    status = models.CharField(max_length=10, unique=True)
    invoices = models.BigIntegerField(default=0)
    subtotal = models.DecimalField(max_digits=20, decimal_places=2, default=Decimal("0"))
    discount = models.DecimalField(max_digits=20, decimal_places=2, default=Decimal("0"))
    tax = models.DecimalField(max_digits=20, decimal_places=2, default=Decimal("0"))
    total = models.DecimalField(max_digits=20, decimal_places=2, default=Decimal("0"))
    credited = models.DecimalField(max_digits=20, decimal_places=2, default=Decimal("0"))
    paid = models.DecimalField(max_digits=20, decimal_places=2, default=Decimal("0"))

    class Meta:
        verbose_name_plural = "invoice summaries"

    def __str__(self) -> str:
        return f"{self.invoices} {self.status} invoices"


class InvoiceFile(models.Model):
    """A download of an issued invoice (PDF, CSV or XLSX), rendered once and served from here:
    what an issued invoice says never changes, only its status, which the documents print, so
    a file is served only while the invoice still has the status it was rendered with (and the
    layout is the current one); otherwise it is rendered again and replaced. A draft is always
    rendered live."""

    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="files")
    fmt = models.CharField(max_length=4)
    status = models.CharField(max_length=10, help_text="The invoice's status the file shows.")
    layout = models.PositiveIntegerField(help_text="billing.documents.LAYOUT when rendered.")
    body = models.BinaryField()
    rendered_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["invoice", "fmt"], name="one_file_per_invoice_format")
        ]

    def __str__(self) -> str:
        return f"{self.invoice_id}.{self.fmt} ({self.status})"


class InvoiceLineQuerySet(models.QuerySet):
    def _refuse_unless_draft(self) -> None:
        if self.exclude(invoice__status=InvoiceStatus.DRAFT).exists():
            raise ImmutableInvoiceError("The lines of an issued invoice never change.")

    def update(self, **kwargs):
        self._refuse_unless_draft()
        return super().update(**kwargs)

    def delete(self):
        self._refuse_unless_draft()
        return super().delete()


class InvoiceLine(models.Model):
    """One resource class over one rate period (usage), or a downtime credit (negative)."""

    class Kind(models.TextChoices):
        USAGE = "usage", "Usage"
        CREDIT = "credit", "Downtime credit"

    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    position = models.PositiveIntegerField(default=0)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.USAGE)
    resource = models.CharField("resource class", max_length=100)
    description = models.CharField(max_length=200)
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    unit_seconds = models.BigIntegerField()
    quantity_hours = models.DecimalField(**QUANTITY)
    quantity = models.DecimalField(**QUANTITY)
    unit = models.CharField(max_length=10, choices=Rate.Unit.choices)
    unit_price = models.DecimalField(**PRICE)
    amount = models.DecimalField(**MONEY)
    # A downtime credit lists the critical health events it is for (as they were then).
    events = models.JSONField(default=list, blank=True)

    objects = InvoiceLineQuerySet.as_manager()

    class Meta:
        ordering = ["invoice_id", "position", "id"]

    def __str__(self) -> str:
        return f"{self.description}: {self.amount}"

    def save(self, *args, **kwargs):
        self._refuse_unless_draft()
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        self._refuse_unless_draft()
        return super().delete(*args, **kwargs)

    def _refuse_unless_draft(self) -> None:
        status = Invoice.objects.filter(pk=self.invoice_id).values_list("status", flat=True).first()
        if status not in (None, InvoiceStatus.DRAFT):
            raise ImmutableInvoiceError("The lines of an issued invoice never change.")


class CreditNote(models.Model):
    """A correction of an issued invoice: a credit that references it, never an edit of it."""

    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="credit_notes")
    number = models.CharField(max_length=20, unique=True)
    amount = models.DecimalField(**MONEY, validators=[MinValueValidator(Decimal("0.01"))])
    reason = models.CharField(max_length=500)
    issue_date = models.DateField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="credit_note_positive")
        ]

    def __str__(self) -> str:
        return self.number


class Payment(models.Model):
    """Money received for an issued invoice: an amount, the day it was paid and its reference.
    Several may settle one invoice (partial payments); recorded only by `payment_record`."""

    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="payments")
    amount = models.DecimalField(**MONEY, validators=[MinValueValidator(Decimal("0.01"))])
    date = models.DateField(help_text="The day the money was received.")
    reference = models.CharField(max_length=100, blank=True)
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["date", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="payment_positive")
        ]

    def __str__(self) -> str:
        return f"{self.amount} on {self.date:%Y-%m-%d}" + (
            f" ({self.reference})" if self.reference else "")


class DocumentSequence(models.Model):
    """The last number given to invoices (or credit notes) in one year: numbers run 1, 2, 3…
    without gaps, taken under a row lock."""

    prefix = models.CharField(max_length=5)
    year = models.PositiveIntegerField()
    last = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["prefix", "year"], name="one_sequence_per_year")
        ]

    def __str__(self) -> str:
        return f"{self.prefix}-{self.year}: {self.last}"


__all__ = [
    "BillingAccount",
    "BudgetAlert",
    "CreditNote",
    "CrossCheck",
    "DocumentSequence",
    "ImmutableInvoiceError",
    "Invoice",
    "InvoiceFile",
    "InvoiceLine",
    "InvoiceStatus",
    "InvoiceSummary",
    "MeteringWindow",
    "Payment",
    "Rate",
    "UsageRecord",
]


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
