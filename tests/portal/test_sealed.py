"""Secrets sealed at rest (core/sealed.py): what is sealed opens, is not readable as stored, is
refused when tampered with or sealed under a key no longer listed, and keys rotate."""

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from core import sealed

TOKEN_TEXT = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ"


def test_what_is_sealed_opens_and_is_not_the_text(settings):
    settings.SEALING_KEYS = [Fernet.generate_key().decode()]
    token = sealed.seal(TOKEN_TEXT)
    assert TOKEN_TEXT not in token and token.isascii()
    assert sealed.open_sealed(token) == TOKEN_TEXT
    assert sealed.seal(TOKEN_TEXT) != token  # a fresh IV each time


def test_a_tampered_token_or_an_unlisted_key_is_refused(settings):
    settings.SEALING_KEYS = [Fernet.generate_key().decode()]
    token = sealed.seal(TOKEN_TEXT)
    tampered = token[:-6] + ("A" if token[-6] != "A" else "B") + token[-5:]
    with pytest.raises(sealed.InvalidToken):
        sealed.open_sealed(tampered)
    settings.SEALING_KEYS = [Fernet.generate_key().decode()]
    with pytest.raises(sealed.InvalidToken):
        sealed.open_sealed(token)


def test_keys_rotate_new_first_old_still_opens_then_reseal(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.SEALING_KEYS = [old]
    token = sealed.seal(TOKEN_TEXT)
    settings.SEALING_KEYS = [new, old]
    assert sealed.open_sealed(token) == TOKEN_TEXT
    resealed = sealed.reseal(token)
    settings.SEALING_KEYS = [new]
    assert sealed.open_sealed(resealed) == TOKEN_TEXT
    with pytest.raises(sealed.InvalidToken):
        sealed.open_sealed(token)


def test_development_derives_a_key_from_secret_key(settings):
    settings.SEALING_KEYS = []
    token = sealed.seal(TOKEN_TEXT)
    assert sealed.open_sealed(token) == TOKEN_TEXT
    settings.SECRET_KEY = "another-" + settings.SECRET_KEY
    with pytest.raises(sealed.InvalidToken):
        sealed.open_sealed(token)


def test_a_key_fernet_refuses_is_a_configuration_error(settings):
    settings.SEALING_KEYS = ["not-a-fernet-key"]
    with pytest.raises(ImproperlyConfigured, match="SEALING_KEYS"):
        sealed.seal(TOKEN_TEXT)
