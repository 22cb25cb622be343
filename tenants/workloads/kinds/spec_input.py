"""Reading a person's spec field by field: every bad value becomes a field error, never a crash.

`SpecFields` collects the clean values and every error of one spec, so a single `SpecError`
names all the fields to fix at once. Values arrive from JSON (the API) or from forms (strings).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .base import SpecError, whole

ALL = "__all__"
# `base.whole` trusts `str.isdigit`, which also accepts "²" or "٣" that `int()` then rejects
# (or turns into a surprise), and `int()` refuses strings of more than 4,300 digits: only plain
# ASCII numbers of sane length reach it.
_INT_TEXT = re.compile(r"\s{0,8}(-?)([0-9]+)\s{0,8}", re.ASCII)
_MAX_DIGITS = 30
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def whole_number(value: Any, *, field_name: str, minimum: int, maximum: int) -> int:
    """`base.whole`, safe for any string a person can type."""
    if isinstance(value, str):
        number = _INT_TEXT.fullmatch(value)
        if not number:
            raise SpecError({field_name: ["A whole number."]})
        if len(number[2]) > _MAX_DIGITS:
            bound = f"At least {minimum:,}." if number[1] else f"At most {maximum:,}."
            raise SpecError({field_name: [bound]})
    return whole(value, field_name=field_name, minimum=minimum, maximum=maximum)


def _printable(key: Any) -> str:
    text = repr(key) if not isinstance(key, str) else key
    return text if len(text) <= 40 else f"{text[:37]}..."


class SpecFields:
    """One spec being read: the fields a kind knows, the errors found so far."""

    def __init__(self, spec: Any, known: Iterable[str]) -> None:
        if not isinstance(spec, Mapping):
            raise SpecError({ALL: ["The spec is a JSON object of fields."]})
        self.spec = spec
        self.errors: dict[str, list[str]] = {}
        known = frozenset(known)
        unknown = [_printable(key) for key in spec if key not in known]
        if unknown:
            self.error(ALL, f"Unknown field(s): {', '.join(sorted(unknown))}.")

    def error(self, name: str, message: str) -> None:
        self.errors.setdefault(name, []).append(message)

    def has_error(self, name: str) -> bool:
        return name in self.errors

    def raise_errors(self) -> None:
        if self.errors:
            raise SpecError(self.errors)

    def _given(self, name: str) -> Any:
        value = self.spec.get(name)
        return None if isinstance(value, str) and not value.strip() else value

    def whole(self, name: str, *, default: int | None, minimum: int, maximum: int) -> int | None:
        value = self._given(name)
        if value is None:
            if default is None:
                self.error(name, "Required.")
            return default
        try:
            return whole_number(value, field_name=name, minimum=minimum, maximum=maximum)
        except SpecError as exc:
            self.errors.setdefault(name, []).extend(exc.fields[name])
            return None

    def flag(self, name: str, *, default: bool) -> bool | None:
        value = self._given(name)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        self.error(name, "Yes or no (true or false).")
        return None

    def text(self, name: str, *, max_length: int, expected: str = "Text.") -> str | None:
        """A required string, stripped, at most `max_length` characters."""
        value = self._given(name)
        if value is None:
            self.error(name, "Required.")
            return None
        if not isinstance(value, str):
            self.error(name, expected)
            return None
        value = value.strip()
        if len(value) > max_length:
            self.error(name, f"At most {max_length:,} characters.")
            return None
        return value
