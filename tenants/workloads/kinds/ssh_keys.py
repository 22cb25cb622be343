"""OpenSSH public keys a person pastes for a VM or a Slurm login node: checked the way sshd
will read them, so a bad key is refused on the form rather than found when login fails.

A key is one line, `<type> <base64 blob> [comment]`, of an accepted type. The blob must decode,
name the same type inside (an `ssh-rsa` label on an ed25519 blob is a paste error), parse as a
key of that type (`cryptography` does what OpenSSH does), and an RSA key must have at least
2048 bits. Private keys, `authorized_keys` options (`from=…`, `command=…`), RFC 4716 and PuTTY
formats, several keys at once and anything else are refused with a message saying what to paste.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import load_ssh_public_key

from .base import SpecError

ACCEPTED_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
    "sk-ssh-ed25519@openssh.com",
)
MIN_RSA_BITS = 2048
# An RSA 16384-bit key is ~2.8 kB of base64: anything longer is not one key.
MAX_LENGTH = 8192
MAX_COMMENT = 256

_PRIVATE_MARKERS = ("-----BEGIN", "PuTTY-User-Key-File", "---- BEGIN SSH2 ENCRYPTED")
_ACCEPTED = ", ".join(ACCEPTED_TYPES)


def _refuse(field_name: str, message: str) -> SpecError:
    return SpecError({field_name: [message]})


def _embedded_type(blob: bytes) -> str:
    """The key type an SSH wire-format blob names in its first field."""
    if len(blob) < 4:
        return ""
    (length,) = struct.unpack(">I", blob[:4])
    raw = blob[4 : 4 + length]
    if length > 64 or len(raw) != length:
        return ""
    return raw.decode("ascii", errors="replace")


def public_key(value: Any, *, field_name: str = "ssh_public_key") -> str:
    """The key normalised to `<type> <blob>[ <comment>]`, or SpecError naming `field_name`."""
    if not isinstance(value, str) or not value.strip():
        raise _refuse(field_name, "Paste an OpenSSH public key (the line in ~/.ssh/id_*.pub).")
    text = value.strip()
    if len(text) > MAX_LENGTH:
        raise _refuse(field_name, "Too long for one public key.")
    if any(marker in text for marker in _PRIVATE_MARKERS):
        raise _refuse(
            field_name,
            "This is a private key: never share it. Paste the public key (the .pub file).",
        )
    if text.startswith("---- BEGIN SSH2 PUBLIC KEY"):
        raise _refuse(
            field_name, "This is the RFC 4716 format: convert it with “ssh-keygen -i -f key.pub”."
        )
    if len(text.splitlines()) > 1:
        raise _refuse(field_name, "One key on one line: paste a single public key.")
    parts = text.split()
    key_type = parts[0]
    if key_type not in ACCEPTED_TYPES:
        if any(part in ACCEPTED_TYPES for part in parts[1:]):
            raise _refuse(
                field_name,
                "Options before the key (from=, command=, …) are not accepted: paste the key "
                "alone.",
            )
        raise _refuse(field_name, f"Not an accepted key type: use one of {_ACCEPTED}.")
    if len(parts) < 2:
        raise _refuse(field_name, "The key data is missing after the key type.")
    blob_text, comment = parts[1], " ".join(parts[2:])
    try:
        blob = base64.b64decode(blob_text, validate=True)
    except (binascii.Error, ValueError):
        raise _refuse(field_name, "The key data is not valid base64: was it cut short?") from None
    if _embedded_type(blob) != key_type:
        raise _refuse(
            field_name, f"The key data is not an {key_type} key: was it cut short or mislabelled?"
        )
    try:
        key = load_ssh_public_key(f"{key_type} {blob_text}".encode("ascii"))
    except (ValueError, UnsupportedAlgorithm):
        raise _refuse(field_name, "The key data does not parse: was it cut short?") from None
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < MIN_RSA_BITS:
        raise _refuse(
            field_name,
            f"An RSA key of {key.key_size} bits is too weak: use at least {MIN_RSA_BITS} bits, "
            "or better an ed25519 key (“ssh-keygen -t ed25519”).",
        )
    if len(comment) > MAX_COMMENT or not comment.isprintable():
        raise _refuse(field_name, "The comment after the key is too long or not printable.")
    return f"{key_type} {blob_text}" + (f" {comment}" if comment else "")
