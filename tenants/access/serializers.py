"""Serializers of the tenants and members API."""

from django.contrib.auth import get_user_model
from rest_framework import serializers

from core.reconcile import ReconcileState
from core.validators import validate_dns1123_label, validate_readable_name

from .models import Membership, Tenant


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

    state = serializers.ChoiceField(source="reconcile_state", choices=ReconcileState.choices)
    applied_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(source="reconcile_error")
    failed_at = serializers.DateTimeField(source="reconcile_failed_at", allow_null=True)
    desired_version = serializers.IntegerField()
    applied_version = serializers.IntegerField()


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
            "cohort",
            "namespace",
            "created_at",
            "cluster",
        ]
        read_only_fields = ["created_at"]


class GpuLendingSerializer(serializers.ModelSerializer):
    """Whether a dedicated tenant lends its idle reserved GPUs to its cohort."""

    lends_reserved_gpus = serializers.BooleanField(
        help_text="Its owners' choice: the cohort's shared tenants may borrow its idle reserved "
                  "GPUs and give them back (preempted) when it launches.")
    cohort = serializers.CharField(
        read_only=True, help_text="The cohort it lends to (a platform admin names it).")
    lending = serializers.BooleanField(
        source="lends_to_cohort", read_only=True,
        help_text="Whether it lends now: dedicated, in a cohort, and its owners opted in.")

    class Meta:
        model = Tenant
        fields = ["lends_reserved_gpus", "cohort", "lending"]


class TenantCreateSerializer(serializers.Serializer):
    slug = serializers.CharField(max_length=63, validators=[validate_dns1123_label])
    name = serializers.CharField(max_length=100, validators=[validate_readable_name])
    isolation = serializers.ChoiceField(choices=Tenant.Isolation.choices)
    cost_center = serializers.CharField(
        max_length=50, required=False, default="", validators=[validate_readable_name]
    )

    def validate_slug(self, value: str) -> str:
        if Tenant.objects.filter(slug=value).exists():
            raise serializers.ValidationError("A tenant with this slug exists.")
        return value


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
