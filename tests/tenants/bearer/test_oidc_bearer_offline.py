"""Keycloak bearer tokens cost Keycloak nothing per request: a JWT is checked against the realm's
keys kept in Django's cache, an opaque token's introspection answer is kept briefly.

The provider counts every request to its realm (`realm`), so "no call" is measured, not assumed.
"""

import hashlib
import time

import pytest
import requests
from django.core.cache import cache

from core import caching
from tests.support.oidc_provider import (
    CLIENT_SECRET,
    DIRECTORY_CLIENT_ID,
    DIRECTORY_CLIENT_SECRET,
    cli_access_token,
    opaque_access_token,
)
from tests.tenants.bearer.calls import me

pytestmark = pytest.mark.django_db(transaction=True)


def test_many_requests_with_one_jwt_call_keycloak_only_for_the_first_jwks(keycloak, acme, client):
    token = cli_access_token(keycloak, "olga")
    keycloak.reset()  # counters from here: the portal's calls only

    assert me(client, token).status_code == 200
    first = keycloak.stats()
    assert (first["discovery"], first["jwks"], first["realm"]) == (1, 1, 2)

    for _ in range(20):
        assert me(client, token).status_code == 200
    assert keycloak.stats() == first


def test_a_jwt_signed_by_a_key_the_realm_never_published_is_refused(keycloak, acme, client):
    token = cli_access_token(keycloak, "olga")
    assert me(client, token).status_code == 200
    forged = keycloak.resign(token, foreign_key=True)  # same kid, another private key

    response = me(client, forged)

    assert response.status_code == 401
    assert "signature" in response.json()["error"]["message"].lower()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"aud": "other-service"}, "audience"),
        ({"exp": int(time.time()) - 120, "iat": int(time.time()) - 420}, "expired"),
    ],
    ids=["wrong-audience", "expired"],
)
def test_a_bad_jwt_is_refused_without_asking_keycloak(keycloak, acme, client, change, message):
    token = cli_access_token(keycloak, "olga")
    assert me(client, token).status_code == 200
    before = keycloak.stats()["realm"]

    response = me(client, keycloak.resign(token, claims=change))

    assert response.status_code == 401
    assert message in response.json()["error"]["message"].lower()
    assert keycloak.stats()["realm"] == before


def test_a_rotated_realm_key_is_picked_up_by_refetching_the_jwks_once(keycloak, acme, client):
    token = cli_access_token(keycloak, "olga")
    assert me(client, token).status_code == 200
    assert keycloak.stats()["jwks"] == 1

    keycloak.rotate_key()
    rotated = keycloak.resign(token, rotated=True)
    assert me(client, rotated).status_code == 200
    assert me(client, rotated).status_code == 200
    assert me(client, token).status_code == 200  # the old key is still published
    assert keycloak.stats()["jwks"] == 2


def test_an_opaque_token_is_introspected_once_per_cache_period(
    keycloak, acme, client, settings, live_server
):
    settings.OIDC_INTROSPECTION_CACHE_SECONDS = 2
    token = opaque_access_token(keycloak, "olga", portal_url=live_server.url)
    keycloak.reset()

    for _ in range(10):
        response = me(client, token)
        assert response.status_code == 200, response.content
    assert response.json()["username"] == "olga"
    assert [t["slug"] for t in response.json()["tenants"]] == ["acme"]
    stats = keycloak.stats()
    # Discovery, then one introspection whose answer names the user (no userinfo call).
    assert (stats["discovery"], stats["introspection"], stats["realm"]) == (1, 1, 2)
    # Kept under the token's digest; the token itself is no part of any key.
    digest = hashlib.sha256(token.encode()).hexdigest()
    assert cache.get(caching.key("oidc-introspection", digest))["active"] is True

    time.sleep(2.2)  # the cache period ends
    assert me(client, token).status_code == 200
    assert keycloak.stats()["introspection"] == 2


def test_an_opaque_token_revoked_in_keycloak_is_refused_after_the_cache_period(
    keycloak, acme, client, settings, live_server
):
    settings.OIDC_INTROSPECTION_CACHE_SECONDS = 1
    token = opaque_access_token(keycloak, "mark", portal_url=live_server.url)
    assert me(client, token).status_code == 200
    revoked = requests.post(
        f"{keycloak.issuer}/protocol/openid-connect/revoke",
        data={"token": token, "client_id": "portal", "client_secret": CLIENT_SECRET},
        timeout=10,
    )
    assert revoked.status_code == 200

    time.sleep(1.2)
    response = me(client, token)
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]
    assert me(client, token).status_code == 401
    assert keycloak.stats()["introspection"] == 2  # the inactive answer is kept too


def test_an_opaque_token_of_another_client_is_refused_and_not_re_asked(keycloak, acme, client):
    answer = requests.post(
        f"{keycloak.issuer}/protocol/openid-connect/token",
        data={
            "grant_type": "client_credentials",
            "client_id": DIRECTORY_CLIENT_ID,
            "client_secret": DIRECTORY_CLIENT_SECRET,
        },
        timeout=10,
    )
    answer.raise_for_status()
    token = answer.json()["access_token"]
    assert token.count(".") != 2
    keycloak.reset()

    for _ in range(3):
        response = me(client, token)
        assert response.status_code == 401
        assert "audience" in response.json()["error"]["message"].lower()
    assert (keycloak.stats()["introspection"], keycloak.stats()["userinfo"]) == (1, 0)

