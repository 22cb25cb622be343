from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from rest_framework import serializers

from portal.validators import column_max, validate_readable_name, validate_readable_text

from . import quota_rules
from .models import Membership, QuotaRequest, QuotaRequestLine, Tenant
from .validators import validate_dns1123_label


class MembershipSerializer(serializers.ModelSerializer):
    slug = serializers.CharField(source="tenant.slug")
    name = serializers.CharField(source="tenant.name")
    isolation = serializers.CharField(source="tenant.isolation")

    class Meta:
        model = Membership
        fields = ["slug", "name", "isolation", "role", "source"]


class MeSerializer(serializers.ModelSerializer):
    roles = serializers.ListField(child=serializers.CharField())
    tenants = MembershipSerializer(many=True)
    name = serializers.CharField(source="get_full_name")

    class Meta:
        model = get_user_model()
        fields = ["id", "username", "name", "email", "roles", "tenants"]


# --- tenants ----------------------------------------------------------------------------------


class ClusterStateSerializer(serializers.Serializer):
    """What the cluster holds of the tenant: applied, applying, or failing with the error."""

    state = serializers.SerializerMethodField()
    applied_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(source="reconcile_error")
    failed_at = serializers.DateTimeField(source="reconcile_failed_at", allow_null=True)
    desired_version = serializers.IntegerField()
    applied_version = serializers.IntegerField()

    def get_state(self, tenant: Tenant) -> str:
        if tenant.reconcile_error:
            return "failing"
        return "applied" if tenant.applied_version >= tenant.desired_version else "applying"


class TenantSerializer(serializers.ModelSerializer):
    namespace = serializers.CharField(read_only=True)
    cluster = ClusterStateSerializer(source="*", read_only=True)

    class Meta:
        model = Tenant
        fields = [
            "slug",
            "name",
            "cost_center",
            "isolation",
            "status",
            "monthly_budget",
            "cohort",
            "namespace",
            "created_at",
            "cluster",
        ]
        read_only_fields = ["created_at"]


class TenantCreateSerializer(serializers.Serializer):
    slug = serializers.CharField(max_length=63, validators=[validate_dns1123_label])
    name = serializers.CharField(max_length=100, validators=[validate_readable_name])
    isolation = serializers.ChoiceField(choices=Tenant.Isolation.choices)
    cost_center = serializers.CharField(
        max_length=50, required=False, default="", validators=[validate_readable_name]
    )
    monthly_budget = serializers.DecimalField(
        max_digits=14, decimal_places=2, min_value=0, required=False
    )

    def validate_slug(self, value: str) -> str:
        if Tenant.objects.filter(slug=value).exists():
            raise serializers.ValidationError("A tenant with this slug exists.")
        return value


class QuotaLineSerializer(serializers.Serializer):
    resource = serializers.CharField()
    label = serializers.CharField()
    limit = serializers.IntegerField()
    used = serializers.IntegerField()
    temporary = serializers.IntegerField()
    ends_on = serializers.DateField(allow_null=True)
    borrowing_limit = serializers.IntegerField(allow_null=True)
    lending_limit = serializers.IntegerField(allow_null=True)


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    name = serializers.CharField(source="user.get_full_name", read_only=True)
    email = serializers.EmailField(source="user.email", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "username", "name", "email", "role", "source", "created_at"]
        read_only_fields = ["source", "created_at"]


class MemberAddSerializer(serializers.Serializer):
    user = serializers.CharField(max_length=254, help_text="Username or e-mail of a portal user.")
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Membership.Role.choices)


# --- quota requests ---------------------------------------------------------------------------


class QuotaRequestLineSerializer(serializers.ModelSerializer):
    label = serializers.CharField(source="resource_label", read_only=True)

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

    class Meta:
        model = QuotaRequest
        fields = [
            "id",
            "tenant",
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


class QuotaRequestCreateSerializer(serializers.Serializer):
    tenant = serializers.CharField(help_text="The tenant's slug.")
    lines = NewLineSerializer(many=True, allow_empty=False, max_length=quota_rules.MAX_LINES)
    justification = serializers.CharField(
        max_length=quota_rules.MAX_JUSTIFICATION, validators=[validate_readable_text]
    )
    ends_on = serializers.DateField(required=False, allow_null=True)

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


class QuotaPreviewLineSerializer(serializers.Serializer):
    resource = serializers.CharField()
    label = serializers.CharField()
    current = serializers.IntegerField()
    in_use = serializers.IntegerField()
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
