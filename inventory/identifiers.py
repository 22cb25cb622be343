"""Hardware identifiers in one canonical spelling, so that uniqueness means what it says.

A MAC written `0C-42-A1-00-00-01` and one written `0c:42:a1:00:00:01` are the same port; an
InfiniBand port GUID written `0x0c42a10300000001` or `0c42:a103:0000:0001` is the same port.
"""

import re

_HEX = re.compile(r"[0-9a-f]+")


class InvalidIdentifier(ValueError):
    pass


def _hex_digits(value: str) -> str:
    digits = value.strip().lower()
    if digits.startswith("0x"):
        digits = digits[2:]
    digits = re.sub(r"[:.\-\s]", "", digits)
    if not _HEX.fullmatch(digits or "-"):
        raise InvalidIdentifier(f"{value!r} is not hexadecimal.")
    return digits


def normalize_mac(value: str) -> str:
    """`aa:bb:cc:dd:ee:ff` from any common spelling; raises InvalidIdentifier."""
    digits = _hex_digits(value)
    if len(digits) != 12:
        raise InvalidIdentifier(f"{value!r} is not a MAC address (12 hex digits).")
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))


def normalize_guid(value: str) -> str:
    """`0c42:a103:0000:0001` (an InfiniBand port GUID) from any common spelling."""
    digits = _hex_digits(value)
    if len(digits) != 16:
        raise InvalidIdentifier(f"{value!r} is not an InfiniBand GUID (16 hex digits).")
    return ":".join(digits[i : i + 4] for i in range(0, 16, 4))


def normalize_gpu_uuid(value: str) -> str:
    """`GPU-xxxxxxxx-xxxx-…` as nvidia-smi and DCGM print it (MIG instances start `MIG-`)."""
    value = value.strip()
    match = re.fullmatch(r"(?i)(gpu|mig)-([0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})", value)
    if not match:
        raise InvalidIdentifier(f"{value!r} is not a GPU UUID (GPU-xxxxxxxx-xxxx-…).")
    return f"{match[1].upper()}-{match[2].lower()}"


# RFC 1123: labels of letters, digits and hyphens, 1-63 characters each, 253 in all. Kubernetes
# node names are the lowercase form (a DNS subdomain); hostnames may be written in capitals.
_DNS_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_DNS_NAME = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")


def validate_hostname(value: str) -> None:
    """A DNS host name (RFC 1123); raises django's ValidationError for forms and imports."""
    from django.core.exceptions import ValidationError

    if len(value) > 253 or not _DNS_NAME.fullmatch(value.lower()):
        raise ValidationError(
            f"{value!r} is not a host name (letters, digits, hyphens and dots).",
            code="invalid_hostname",
        )


def validate_k8s_node_name(value: str) -> None:
    """A Kubernetes node name: a lowercase RFC 1123 subdomain."""
    from django.core.exceptions import ValidationError

    if len(value) > 253 or not _DNS_NAME.fullmatch(value):
        raise ValidationError(
            f"{value!r} is not a Kubernetes node name (lowercase letters, digits, hyphens "
            "and dots).",
            code="invalid_k8s_name",
        )
