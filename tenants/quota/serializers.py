"""Serializers of the quota and quota requests API."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from rest_framework import serializers

from core.validators import column_max, validate_readable_text

from . import rules as quota_rules
from .models import QuotaRequest, QuotaRequestLine, resource_label


class QuotaLineSerializer(serializers.Serializer):
    resource = serializers.CharField()
    cluster = serializers.CharField(
        allow_null=True, help_text="The cluster the grant is on; null: anywhere in the fleet."
    )
    label = serializers.CharField()
    limit = serializers.IntegerField()
    used = serializers.IntegerField(help_text="Held by the tenant's workloads.")
    cluster_used = serializers.IntegerField(
        allow_null=True, help_text="What the cluster last reported in use, when it differs."
    )
    temporary = serializers.IntegerField()
    ends_on = serializers.DateField(allow_null=True)
    borrowing_limit = serializers.IntegerField(allow_null=True)
    lending_limit = serializers.IntegerField(allow_null=True)
    borrowed = serializers.IntegerField(
        help_text="Of what the cluster reports in use, how much Kueue counts as borrowed from "
                  "the tenant's cohort (GPUs and MIG instances; 0 outside a cohort)."
    )
    lent = serializers.IntegerField(
        help_text="A dedicated tenant that lends its idle reserved GPUs: how many of them the "
                  "cohort's shared tenants borrow, as Kueue last reported it (0 otherwise)."
    )


class ResourceLabelField(serializers.CharField):
    """A resource class as people read it, from a line's `resource`."""

    def __init__(self, **kwargs) -> None:
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, value) -> str:
        return super().to_representation(resource_label(value))


class QuotaRequestLineSerializer(serializers.ModelSerializer):
    label = ResourceLabelField(source="resource")

    class Meta:
        model = QuotaRequestLine
        fields = [
            "resource",
            "label",
            "amount",
            "approved_amount",
            "limit_before",
            "limit_after",
        ]
        read_only_fields = fields


class QuotaRequestSerializer(serializers.ModelSerializer):
    tenant = serializers.CharField(source="tenant.slug", read_only=True)
    requested_by = serializers.CharField(
        source="requested_by.username", read_only=True, allow_null=True
    )
    decided_by = serializers.CharField(
        source="decided_by.username", read_only=True, allow_null=True
    )
    lines = QuotaRequestLineSerializer(many=True, read_only=True)
    cluster = serializers.CharField(
        source="cluster_id", read_only=True, allow_null=True,
        help_text="The cluster the quota is asked for; null: anywhere in the fleet.",
    )

    class Meta:
        model = QuotaRequest
        fields = [
            "id",
            "tenant",
            "cluster",
            "status",
            "lines",
            "justification",
            "ends_on",
            "requested_by",
            "created_at",
            "decided_by",
            "decided_at",
            "decision_note",
            "applied_at",
            "last_error",
            "attempts",
        ]
        read_only_fields = fields


class NewLineSerializer(serializers.Serializer):
    resource = serializers.CharField(max_length=100)
    amount = serializers.IntegerField()

    def validate(self, attrs):
        isolation = self.context.get("isolation", "shared")
        errors = {}
        resource_class = None
        try:
            resource_class = quota_rules.check_resource(
                resource=attrs["resource"], isolation=isolation
            )
        except DjangoValidationError as exc:
            errors["resource"] = exc.messages
        try:
            quota_rules.check_amount(amount=attrs["amount"], resource_class=resource_class)
        except DjangoValidationError as exc:
            errors["amount"] = exc.messages
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class WhereField(serializers.CharField):
    """Where quota is asked for: the slug of a cluster in service; null or left out: anywhere
    in the fleet. Anything else is a field error (400)."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("help_text", "The slug of a cluster in service to ask for quota on; "
                                       "null or left out: anywhere in the fleet.")
        super().__init__(required=False, allow_null=True, allow_blank=True, max_length=40,
                         **kwargs)

    def run_validation(self, data=serializers.empty):
        value = super().run_validation(data) or None  # blank or null: anywhere
        try:
            quota_rules.check_cluster(cluster=value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return value


class QuotaRequestCreateSerializer(serializers.Serializer):
    tenant = serializers.CharField(help_text="The tenant's slug.")
    lines = NewLineSerializer(many=True, allow_empty=False, max_length=quota_rules.MAX_LINES)
    justification = serializers.CharField(
        max_length=quota_rules.MAX_JUSTIFICATION, validators=[validate_readable_text]
    )
    ends_on = serializers.DateField(required=False, allow_null=True)
    cluster = WhereField()

    def validate_ends_on(self, value):
        try:
            quota_rules.check_ends_on(ends_on=value, today=timezone.localdate())
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return value

    def validate_lines(self, value):
        try:
            quota_rules.check_no_duplicates([line["resource"] for line in value])
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return value


class QuotaPreviewRequestSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    lines = NewLineSerializer(many=True, allow_empty=False, max_length=quota_rules.MAX_LINES)
    cluster = WhereField()


class QuotaPreviewLineSerializer(serializers.Serializer):
    resource = serializers.CharField()
    label = serializers.CharField()
    current = serializers.IntegerField()
    in_use = serializers.IntegerField(help_text="What the tenant's workloads hold.")
    cluster_in_use = serializers.IntegerField(
        allow_null=True, help_text="What the cluster last reported in use, when it differs."
    )
    amount = serializers.IntegerField()
    resulting = serializers.IntegerField()
    healthy = serializers.IntegerField(source="capacity.healthy", allow_null=True)
    granted = serializers.IntegerField(source="capacity.granted")
    free_after = serializers.IntegerField(allow_null=True)
    fits = serializers.BooleanField(allow_null=True)
    ratio_before = serializers.DecimalField(max_digits=10, decimal_places=2, allow_null=True)
    ratio_after = serializers.DecimalField(max_digits=10, decimal_places=2, allow_null=True)


class ApproveSerializer(serializers.Serializer):
    amounts = serializers.DictField(
        child=serializers.IntegerField(
            min_value=0, max_value=column_max(QuotaRequestLine._meta.get_field("approved_amount"))
        ),
        required=False,
        help_text="Granted amount per resource, when it differs from the ask.",
    )
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=4000,
        validators=[validate_readable_text],
    )


class RejectSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=4000, validators=[validate_readable_text])


class CapacitySerializer(serializers.Serializer):
    resource = serializers.CharField()
    label = serializers.CharField()
    installed = serializers.IntegerField()
    healthy = serializers.IntegerField()
    reserved = serializers.IntegerField()
    granted = serializers.IntegerField()
    in_use = serializers.IntegerField(help_text="What tenants' workloads hold.")
    cluster_in_use = serializers.IntegerField(
        allow_null=True,
        help_text="What the cluster last reported in use (pods); null where not measured.",
    )
