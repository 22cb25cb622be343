"""The tenant an API request acts for, named in its body: found the way pages find it."""

from collections.abc import Mapping

from django.core.exceptions import PermissionDenied
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from ..access.models import Tenant
from ..access.rules import tenant_get_for_user, tenants_operated_by


def operated_tenant(user, data, *, what: str = "ask for quota") -> Tenant:
    """The tenant named in `data` if `user` may ask for its quota; 404 if not visible, 403 if
    only viewing; 400 if the body is not a JSON object."""
    if not isinstance(data, Mapping):
        raise ValidationError({"non_field_errors": ["Expected a JSON object."]})
    try:
        # The field's own checks (a string, no NUL character) before the lookup uses it.
        slug = serializers.CharField(allow_blank=True).run_validation(data.get("tenant", ""))
    except ValidationError as exc:
        raise ValidationError({"tenant": exc.detail}) from None
    tenant = tenant_get_for_user(user=user, slug=slug)
    if not tenants_operated_by(user).filter(pk=tenant.pk).exists():
        raise PermissionDenied(f"Viewers cannot {what}.")
    return tenant
