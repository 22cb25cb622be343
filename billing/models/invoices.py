"""Invoices, their lines, files and summaries, credit notes, payments, and the numbering."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from core.choices import ColoredChoices, colored
from core.errors import RuleViolation
from core.state_machine import transition
from tenants.models import Tenant

from .accounts import Rate
from .fields import MONEY, PERCENT, PRICE, QUANTITY


class ImmutableInvoiceError(RuleViolation):
    """An issued (paid, void) invoice or one of its lines was about to change."""


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
