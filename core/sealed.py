"""Secrets the portal keeps but never shows, sealed at rest with Fernet (AES-128-CBC and
HMAC-SHA256, from `cryptography`).

`SEALING_KEYS` lists the keys: the first seals, every one opens (`MultiFernet`), so keys rotate
by putting a new one first, re-sealing (`reseal`), then dropping the old one. Production requires
them; development derives one from `SECRET_KEY`, so that `make demo` needs nothing more. What is
sealed is text; what comes back from `seal` is ASCII, for a TextField.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

__all__ = ["InvalidToken", "open_sealed", "reseal", "seal"]


def _derived_key() -> bytes:
    digest = hashlib.sha256(b"ai-factory-portal/sealing/" + settings.SECRET_KEY.encode()).digest()
    return base64.urlsafe_b64encode(digest)


def _box() -> MultiFernet:
    keys = [key.strip() for key in settings.SEALING_KEYS if key.strip()] or [_derived_key()]
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError as exc:  # not 32 url-safe base64-encoded bytes
        raise ImproperlyConfigured(f"SEALING_KEYS holds a key Fernet refuses: {exc}") from exc


def seal(text: str) -> str:
    """`text`, encrypted and authenticated with the first key."""
    return _box().encrypt(text.encode()).decode("ascii")


def open_sealed(token: str) -> str:
    """The text `seal` sealed; InvalidToken when no key opens it or it was tampered with."""
    return _box().decrypt(token.encode("ascii")).decode()


def reseal(token: str) -> str:
    """The same text sealed with the first key (for key rotation)."""
    return _box().rotate(token.encode("ascii")).decode("ascii")
