"""Serializers of the model credentials API. The secret values are write-only: no response
ever holds them, not even to the people who stored them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..access.serializers import ClusterStateSerializer
from .models import ModelCredential
from .services import MAX_VALUE


def _secret(help_text: str) -> serializers.CharField:
    return serializers.CharField(write_only=True, required=False, allow_blank=True,
                                 max_length=MAX_VALUE, trim_whitespace=True, help_text=help_text)


class CredentialValuesSerializer(serializers.Serializer):
    """The values of a credential (which ones its kind needs: the service says) and S3's
    settings. Write-only."""

    token = _secret("A Hugging Face token (kind huggingface).")
    access_key_id = _secret("An S3 access key ID (kind s3).")
    secret_access_key = _secret("An S3 secret access key (kind s3).")
    s3_endpoint = serializers.CharField(required=False, allow_blank=True, max_length=270,
                                        help_text="host[:port] or a URL; empty for AWS S3.")
    s3_region = serializers.CharField(required=False, allow_blank=True, max_length=40)
    s3_use_https = serializers.BooleanField(required=False, default=True)

    def values(self) -> dict[str, str]:
        data = self.validated_data
        return {name: data.get(name, "") for name in
                ("token", "access_key_id", "secret_access_key")}

    def s3_settings(self) -> dict:
        data = self.validated_data
        return {"s3_endpoint": data.get("s3_endpoint", ""), "s3_region": data.get("s3_region", ""),
                "s3_use_https": data.get("s3_use_https", True)}


class CredentialCreateSerializer(CredentialValuesSerializer):
    name = serializers.CharField(max_length=ModelCredential._meta.get_field("name").max_length)
    kind = serializers.ChoiceField(choices=ModelCredential.Kind.choices)


class EndpointRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class ModelCredentialSerializer(serializers.ModelSerializer):
    """A credential as everyone who sees the tenant reads it: its name, kind and where it is
    used and applied; never its values."""

    created_by = serializers.CharField(source="created_by.username", default=None,
                                       allow_null=True)
    replaced_by = serializers.CharField(source="replaced_by.username", default=None,
                                        allow_null=True)
    used_by = serializers.SerializerMethodField()
    cluster = ClusterStateSerializer(source="*", read_only=True)

    class Meta:
        model = ModelCredential
        fields = ["name", "kind", "s3_endpoint", "s3_region", "s3_use_https", "created_by",
                  "created_at", "replaced_by", "replaced_at", "used_by", "cluster"]
        read_only_fields = fields

    @extend_schema_field(EndpointRefSerializer(many=True))
    def get_used_by(self, credential) -> list[dict]:
        return EndpointRefSerializer(
            [{"id": pk, "name": name} for pk, name in getattr(credential, "used_by", [])],
            many=True,
        ).data
