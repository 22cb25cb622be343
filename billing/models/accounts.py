"""A tenant's billing account, its budget alerts, and the rate card."""

from __future__ import annotations

from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from tenants.models import Tenant

from .fields import MONEY, PERCENT, PRICE


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
