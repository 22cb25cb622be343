"""What the billing API reads and writes: rate cards, invoices with their lines and credit notes,
and the bodies of finance's invoice actions."""

from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import (
    CreditNote,
    ExportStatus,
    Invoice,
    InvoiceExport,
    InvoiceLine,
    Payment,
    Rate,
)

MONEY = {"max_digits": 14, "decimal_places": 2}


class RateSerializer(serializers.ModelSerializer):
    currency = serializers.SerializerMethodField(help_text="The ISO 4217 code of every price.")

    class Meta:
        model = Rate
        fields = ["id", "resource", "unit_price", "unit", "currency", "valid_from", "valid_to",
                  "note"]
        extra_kwargs = {
            "resource": {"help_text": "A resource class, e.g. gpu:nvidia-h100-80gb, cpu."},
            "unit_price": {"help_text": "The price of one unit-hour (or unit-month)."},
            "valid_to": {"help_text": "Exclusive; null: in force until further notice."},
        }

    def get_currency(self, rate: Rate) -> str:
        return settings.BILLING_CURRENCY


class InvoiceLineSerializer(serializers.ModelSerializer):
    events = serializers.ListField(
        child=serializers.DictField(), read_only=True,
        help_text="A downtime credit's critical health events (hostname, kind, detail, "
        "opened_at, resolved_at), as they were when computed.",
    )

    class Meta:
        model = InvoiceLine
        fields = ["position", "kind", "resource", "description", "period_start", "period_end",
                  "unit_seconds", "quantity_hours", "quantity", "unit", "unit_price", "amount",
                  "events"]


class CreditNoteSerializer(serializers.ModelSerializer):
    class Meta:
        model = CreditNote
        fields = ["id", "number", "amount", "reason", "issue_date", "created_at"]


class PaymentSerializer(serializers.ModelSerializer):
    recorded_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Payment
        fields = ["id", "amount", "date", "reference", "recorded_by", "created_at"]


class UnpricedUsageSerializer(serializers.Serializer):
    resource = serializers.CharField()
    label = serializers.CharField(required=False)
    reason = serializers.CharField()
    period_start = serializers.DateTimeField()
    period_end = serializers.DateTimeField()
    unit_seconds = serializers.IntegerField()
    quantity_hours = serializers.DecimalField(max_digits=20, decimal_places=6)


class InvoiceSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    amount_credited = serializers.DecimalField(
        **MONEY, read_only=True, help_text="The sum of its credit notes.")
    net_total = serializers.DecimalField(
        **MONEY, read_only=True, help_text="The total less its credit notes.")
    amount_paid = serializers.DecimalField(
        **MONEY, read_only=True, help_text="The sum of its payments.")
    balance_due = serializers.DecimalField(
        **MONEY, read_only=True,
        help_text="total - amount_credited - amount_paid; negative when over-settled.")

    class Meta:
        model = Invoice
        fields = ["id", "url", "number", "status", "tenant", "tenant_name", "cost_center",
                  "period_start", "period_end", "currency", "subtotal", "discount", "tax",
                  "total", "amount_credited", "net_total", "amount_paid", "balance_due",
                  "issue_date", "due_date", "issued_at"]
        extra_kwargs = {
            "number": {"help_text": "INV-<year>-<0001>; null while a draft."},
            "period_end": {"help_text": "Exclusive: the first instant of the next month."},
        }

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, invoice: Invoice) -> str:
        path = reverse("api:invoice-detail", args=[invoice.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class InvoiceDetailSerializer(InvoiceSerializer):
    issued_by = serializers.CharField(source="issued_by.username", read_only=True,
                                      allow_null=True)
    lines = InvoiceLineSerializer(many=True, read_only=True)
    credit_notes = CreditNoteSerializer(many=True, read_only=True)
    payments = PaymentSerializer(many=True, read_only=True)
    unpriced = UnpricedUsageSerializer(
        many=True, read_only=True,
        help_text="Usage no rate prices: shown, never billed (a draft with some is not issued).",
    )
    downloads = serializers.SerializerMethodField()

    class Meta(InvoiceSerializer.Meta):
        fields = [*InvoiceSerializer.Meta.fields, "discount_percent", "tax_percent",
                  "computed_at", "issued_by", "paid_at", "payment_reference", "voided_at",
                  "void_reason", "unpriced", "lines", "credit_notes", "payments",
                  "downloads"]

    @extend_schema_field({"type": "object", "properties": {
        fmt: {"type": "string", "format": "uri"} for fmt in ("csv", "xlsx", "pdf")}})
    def get_downloads(self, invoice: Invoice) -> dict[str, str]:
        request = self.context.get("request")
        paths = {fmt: reverse(f"api:invoice-export-{fmt}", args=[invoice.pk])
                 for fmt in ("csv", "xlsx", "pdf")}
        if request is None:
            return paths
        return {fmt: request.build_absolute_uri(path) for fmt, path in paths.items()}


# The bodies of finance's actions


class InvoiceIssueSerializer(serializers.Serializer):
    issue_date = serializers.DateField(
        required=False, help_text="Default: today. Not before the month ends, not in the future."
    )
    unmetered_reason = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default="",
        help_text="Issue although hours of the month were never metered (refused without it), "
                  "and why: kept in the audit trail.",
    )
    expected_total = serializers.DecimalField(
        max_digits=14, decimal_places=2, required=False,
        help_text="The total you reviewed: refused (400) if the recomputed draft differs.",
    )

    def validate_issue_date(self, value):
        if value > timezone.localdate():
            raise serializers.ValidationError("An invoice cannot be issued in the future.")
        return value


class InvoicePaymentSerializer(serializers.Serializer):
    amount = serializers.DecimalField(
        **MONEY, required=False, min_value=Decimal("0.01"),
        help_text="What was received: all or part of the balance due, never more. "
                  "Default: the whole balance due.",
    )
    paid_on = serializers.DateField(required=False, help_text="The day it was received. "
                                    "Default: today (or the day of paid_at).")
    paid_at = serializers.DateTimeField(required=False, help_text="Deprecated: use paid_on.")
    reference = serializers.CharField(
        max_length=100, required=False, allow_blank=True, default="",
        help_text="The payment's reference (a bank transfer's, for instance).",
    )

    def validate_paid_at(self, value):
        if value > timezone.now() + timedelta(minutes=5):
            raise serializers.ValidationError("A payment cannot be recorded in the future.")
        return value


class InvoiceVoidSerializer(serializers.Serializer):
    reason = serializers.CharField(
        max_length=500, help_text="Why the invoice is void; it stays on record with it."
    )


class CreditNoteCreateSerializer(serializers.Serializer):
    amount = serializers.DecimalField(
        **MONEY, min_value=Decimal("0.01"),
        help_text="At most what is left of the invoice's total after earlier credit notes.",
    )
    reason = serializers.CharField(max_length=500, help_text="What the credit corrects.")


class InvoiceExportCreateSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["csv", "xlsx"])
    filters = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField(max_length=200), max_length=50),
        required=False, default=dict,
        help_text="The invoice list's filters, each a list of values, e.g. "
                  '{"period": ["2026-10"], "status": ["issued", "paid"]}; none: every invoice.',
    )

    def validate_filters(self, value: dict) -> dict:
        if len(value) > 20:
            raise serializers.ValidationError("At most 20 filters.")
        return value


class InvoiceExportSerializer(serializers.ModelSerializer):
    format = serializers.CharField(source="fmt", read_only=True)
    filters = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), read_only=True
    )
    file_url = serializers.SerializerMethodField(
        help_text="Where to download it, once its status is ready."
    )

    class Meta:
        model = InvoiceExport
        fields = ["id", "format", "filters", "invoice_count", "status", "error", "size",
                  "created_at", "started_at", "finished_at", "file_url"]
        read_only_fields = fields

    @extend_schema_field({"type": "string", "format": "uri", "nullable": True})
    def get_file_url(self, export) -> str | None:
        if export.status != ExportStatus.READY:
            return None
        path = reverse("api:invoice-export-file", args=[export.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path
