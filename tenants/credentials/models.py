"""A tenant's model credentials: their secret values sealed (core.sealed), never shown."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator
from django.db import models
from django.utils import timezone

from core.reconcile import Reconciled
from core.validators import validate_dns1123_label, validate_readable_name

from ..access.models import Tenant
from .manifests import HUGGING_FACE, MAX_NAME, S3

# host[:port], as KServe's s3-endpoint annotation takes it (no scheme: s3-usehttps says it).
S3_ENDPOINT = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:[0-9]{1,5})?", re.ASCII)
S3_REGION = re.compile(r"[a-z0-9-]{1,40}", re.ASCII)


def validate_s3_endpoint(value: str) -> None:
    if value and not S3_ENDPOINT.fullmatch(value):
        raise ValidationError("A host name, optionally with :port, e.g. minio.storage:9000.")


def validate_s3_region(value: str) -> None:
    if value and not S3_REGION.fullmatch(value):
        raise ValidationError("A region such as eu-central-1.")


class ModelCredentialQuerySet(models.QuerySet):
    def kinds_of(self, tenant: Tenant) -> dict[str, str]:
        """name → kind of the tenant's credentials: what a launch may pick from. One query."""
        return dict(self.filter(tenant=tenant).order_by("name").values_list("name", "kind"))


class ModelCredential(Reconciled):
    """A secret a tenant's endpoints load models with; synced as a Secret into its namespace."""

    class Kind(models.TextChoices):
        HUGGING_FACE = HUGGING_FACE, "Hugging Face token"
        S3 = S3, "S3 access key"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="model_credentials")
    name = models.CharField(
        max_length=MAX_NAME,
        validators=[validate_dns1123_label, MaxLengthValidator(MAX_NAME)],
        help_text="Lowercase letters, digits and '-'; endpoints pick the credential by it.",
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # The secret values (a JSON object of the Secret's keys), sealed: never stored in clear,
    # never shown to anyone; only the reconcile opens it, to write the Secret.
    sealed_values = models.TextField(editable=False)
    s3_endpoint = models.CharField(
        "S3 endpoint", max_length=260, blank=True, validators=[validate_s3_endpoint],
        help_text="host[:port]; empty: AWS S3 (s3.amazonaws.com).",
    )
    s3_region = models.CharField(
        "S3 region", max_length=40, blank=True, validators=[validate_s3_region]
    )
    s3_use_https = models.BooleanField("S3 over HTTPS", default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    replaced_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    replaced_at = models.DateTimeField(null=True, blank=True)

    objects = ModelCredentialQuerySet.as_manager()

    class Meta:
        ordering = ["tenant", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="unique_model_credential"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        validate_readable_name(self.name)
        if self.kind != self.Kind.S3 and (self.s3_endpoint or self.s3_region):
            raise ValidationError({"s3_endpoint": "Only for S3 credentials."})
