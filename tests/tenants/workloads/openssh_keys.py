"""Real OpenSSH keys for the tests of kinds that take one: made once per run with
`cryptography`, in the exact text `ssh-keygen` writes."""

import base64
import struct
from functools import cache

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

_OPENSSH = (serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)


def _text(public_key) -> str:
    return public_key.public_bytes(*_OPENSSH).decode()


@cache
def ed25519_private():
    return ed25519.Ed25519PrivateKey.generate()


def ed25519_public(comment: str = "alice@laptop") -> str:
    return f"{_text(ed25519_private().public_key())} {comment}".strip()


def ed25519_private_text() -> str:
    return (
        ed25519_private()
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
        .decode()
    )


@cache
def rsa_public(bits: int) -> str:
    return _text(rsa.generate_private_key(public_exponent=65537, key_size=bits).public_key())


@cache
def ecdsa_public(curve_name: str = "secp384r1") -> str:
    curve = {"secp256r1": ec.SECP256R1, "secp384r1": ec.SECP384R1, "secp521r1": ec.SECP521R1}
    return _text(ec.generate_private_key(curve[curve_name]()).public_key())


def security_key_public() -> str:
    """An `sk-ssh-ed25519@openssh.com` key (a FIDO token's), laid out as OpenSSH writes it."""

    def field(data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + data

    raw = (
        ed25519_private()
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )
    blob = field(b"sk-ssh-ed25519@openssh.com") + field(raw) + field(b"ssh:")
    return f"sk-ssh-ed25519@openssh.com {base64.b64encode(blob).decode()} yubikey"
