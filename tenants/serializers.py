from django.contrib.auth import get_user_model
from rest_framework import serializers

from .models import Membership


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
