"""Names a kind derives from a workload's name for the objects it creates, or that operators
create from them.

The machinery guarantees the workload's name is a DNS-1123 label (at most 63 characters, may
start with a digit). Operators build more names from ours (`<name>-headless` Services, `isvc.<name>
-predictor` label values, `<statefulset>-<hash>` revision labels), and Services must be DNS-1035
labels (a letter first), so each kind bounds the name it hands on to what those derivations allow.
"""

from __future__ import annotations

import hashlib
import re

DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?", re.ASCII)
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", re.ASCII)
_NOT_LABEL_CHARS = re.compile(r"[^a-z0-9-]+", re.ASCII)
_DIGEST_LENGTH = 8


def bounded_label(name: str, max_length: int, *, prefix: str = "w") -> str:
    """`name` itself when it is a DNS-1035 label of at most `max_length` characters; otherwise a
    stable short form: `prefix` first when the name does not start with a letter, a digest of the
    whole name last (so two long names sharing a start stay apart)."""
    if len(name) <= max_length and DNS1035_LABEL.fullmatch(name):
        return name
    if max_length < _DIGEST_LENGTH + 2:
        raise ValueError(f"max_length {max_length} leaves no room for a readable name")
    digest = hashlib.sha256(name.encode()).hexdigest()[:_DIGEST_LENGTH]
    clean = _NOT_LABEL_CHARS.sub("-", name.lower()).strip("-")
    if not clean[:1].isalpha():
        clean = f"{prefix}-{clean}"
    head = clean[: max_length - _DIGEST_LENGTH - 1].rstrip("-")
    return f"{head}-{digest}"
