"""Names that become Kubernetes objects must be DNS-1123 labels."""

import re

from django.core.exceptions import ValidationError

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def validate_dns1123_label(value: str) -> None:
    if len(value) > 63:
        raise ValidationError("At most 63 characters.", code="dns1123_length")
    if not DNS1123_LABEL.match(value):
        raise ValidationError(
            "Use lowercase letters, digits and '-', starting and ending with a letter or digit.",
            code="dns1123",
        )
