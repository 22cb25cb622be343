"""Validators for text people read and numbers the database stores, shared by every app.

Model fields carry them, so ModelForms, ModelSerializers, `full_clean()` in services and the
inventory import all refuse the same input with the same message.
"""

import re
import unicodedata

from django.core.exceptions import ValidationError
from django.db import connection, models

# Bidirectional embeddings, overrides and isolates: they make "abc‮fdp.exe" read as
# "abcexe.pdf". They are in category Cf; named here for the message.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
LINE_BREAKS = frozenset("\t\n\r")


def _invisible(value: str, *, allowed: frozenset[str] = frozenset()) -> str | None:
    for char in value:
        if char not in allowed and unicodedata.category(char) in ("Cc", "Cf"):
            return char
    return None


def _refuse(char: str) -> None:
    kind = "bidirectional control" if char in BIDI_CONTROLS else "control character"
    raise ValidationError(
        f"Remove the invisible {kind} U+{ord(char):04X}: names must read as they are.",
        code="control_character",
    )


def validate_readable_name(value: str) -> None:
    """A single-line name: no control (Cc) or format (Cf) character at all."""
    if isinstance(value, str) and (char := _invisible(value)):
        _refuse(char)


def validate_readable_text(value: str) -> None:
    """Free text over several lines: tabs and line breaks, but no other Cc or Cf character."""
    if isinstance(value, str) and (char := _invisible(value, allowed=LINE_BREAKS)):
        _refuse(char)


def column_max(field: models.Field) -> int:
    """The largest value an integer column holds in the database in use."""
    return connection.ops.integer_field_range(field.get_internal_type())[1]


# Names that become Kubernetes objects (namespaces, workloads) must be DNS-1123 labels.
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def validate_dns1123_label(value: str) -> None:
    if len(value) > 63:
        raise ValidationError("At most 63 characters.", code="dns1123_length")
    if not DNS1123_LABEL.match(value):
        raise ValidationError(
            "Use lowercase letters, digits and '-', starting and ending with a letter or digit.",
            code="dns1123",
        )


# A free label people put on what they launch (a project, an experiment) to group its cost.
COST_LABEL = re.compile(r"^[A-Za-z0-9_.\- ]{1,63}$")


def validate_cost_label(value: str) -> None:
    """Letters, digits, '-', '_', '.' and spaces, at most 63 characters; not only spaces."""
    if value and (not COST_LABEL.match(value) or not value.strip()):
        raise ValidationError(
            "Use at most 63 letters, digits, spaces, '-', '_' or '.'.", code="cost_label"
        )
