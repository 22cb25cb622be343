"""Fixtures for the oidc part of the suite (registered in tests/conftest.py).

`oidc_provider` starts the test OpenID Connect provider once per session, for the live server
(pytest-django's, on 127.0.0.1: `--liveserver 127.0.0.1` in pyproject), and stops it by PID.
`keycloak` points the portal's settings at it for one test, with the users reset, exactly as an
operator would point them at a real Keycloak realm.
"""

from collections.abc import Iterator

import pytest
from django.contrib.sessions.models import Session

from core.openid import forget_provider_metadata

from .oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    DIRECTORY_CLIENT_ID,
    DIRECTORY_CLIENT_SECRET,
    OidcProvider,
    start_provider,
)


@pytest.fixture(scope="session")
def oidc_provider(live_server) -> Iterator[OidcProvider]:
    provider = start_provider(portal_urls=[live_server.url])
    try:
        yield provider
    finally:
        provider.stop()


def configure_portal_for(settings, issuer: str) -> None:
    settings.OIDC_ISSUER_URL = issuer
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_API_AUDIENCE = CLIENT_ID
    settings.OIDC_TIMEOUT = 5.0
    settings.KEYCLOAK_DIRECTORY_CLIENT_ID = DIRECTORY_CLIENT_ID
    settings.KEYCLOAK_DIRECTORY_CLIENT_SECRET = DIRECTORY_CLIENT_SECRET
    forget_provider_metadata()


@pytest.fixture
def keycloak(oidc_provider, settings) -> Iterator[OidcProvider]:
    """The portal signs in through the test provider; its users are back to the fixture."""
    oidc_provider.reset()
    configure_portal_for(settings, oidc_provider.issuer)
    yield oidc_provider
    forget_provider_metadata()


@pytest.fixture
def signed_in_sessions():
    """`signed_in_sessions()`: the usernames holding an authenticated portal session."""

    def _users() -> list[str]:
        from django.contrib.auth import get_user_model

        ids = [
            data["_auth_user_id"]
            for data in (s.get_decoded() for s in Session.objects.all())
            if "_auth_user_id" in data
        ]
        users = get_user_model().objects.filter(pk__in=ids)
        return sorted(users.values_list("username", flat=True))

    return _users
