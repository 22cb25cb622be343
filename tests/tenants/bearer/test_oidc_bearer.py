"""The API takes Keycloak access tokens as Bearer tokens, validated against the realm's JWKS.

Valid tokens come from the provider the way a script gets them (authorization code + PKCE with
the public `portal-cli` client); invalid ones are real tokens with one thing changed, re-signed
with the realm's own key, so that only the claim under test is wrong.
"""

import time

import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from rest_framework.test import APIClient

from core import caching
from core.models import ApiToken, OidcIdentity
from core.tokens import api_token_create
from tenants.models import Membership, Source
from tests.support.fixtures_oidc import configure_portal_for
from tests.support.oidc_provider import OTHER_RESOURCE, USERS, cli_access_token
from tests.tenants.bearer.calls import me

pytestmark = pytest.mark.django_db(transaction=True)

User = get_user_model()


def test_a_keycloak_access_token_is_accepted_and_syncs_the_user(keycloak, acme, client):
    token = cli_access_token(keycloak, "olga")

    response = me(client, token)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["username"] == "olga"
    assert [(t["slug"], t["role"], t["source"]) for t in body["tenants"]] == [
        ("acme", "owner", "keycloak")
    ]
    assert OidcIdentity.objects.get(user__username="olga").subject == USERS["olga"]["sub"]
    assert not Session.objects.exists()  # a bearer call leaves no session behind
    assert "sessionid" not in response.cookies


def test_the_same_user_is_found_by_sub_on_every_call(keycloak, acme, client):
    first, second = cli_access_token(keycloak, "mark"), cli_access_token(keycloak, "mark")

    assert me(client, first).json()["username"] == "mark"
    assert me(client, second).json()["username"] == "mark"
    assert me(client, first).status_code == 200
    assert User.objects.filter(username__startswith="mark").count() == 1


def test_a_new_token_carries_keycloak_group_changes(keycloak, acme, client):
    me(client, cli_access_token(keycloak, "mark"))
    keycloak.update_user("mark", groups=[])

    response = me(client, cli_access_token(keycloak, "mark"))

    assert response.json()["tenants"] == []
    assert not Membership.objects.filter(user__username="mark", source=Source.KEYCLOAK).exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"exp": int(time.time()) - 600, "iat": int(time.time()) - 900}, "expired"),
        ({"iss": "http://127.0.0.1:9/realms/ai-factory"}, "issuer"),
        ({"aud": "account"}, "audience"),
    ],
    ids=["expired", "wrong-issuer", "wrong-audience"],
)
def test_an_access_token_with_a_bad_claim_is_refused_with_401(
    keycloak, acme, client, change, message
):
    token = keycloak.resign(cli_access_token(keycloak, "olga"), claims=change)

    response = me(client, token)

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"
    assert message in response.json()["error"]["message"].lower()
    assert response["WWW-Authenticate"] == "Bearer"
    assert not User.objects.filter(username="olga").exists()


def test_a_token_for_another_service_is_refused_with_401(keycloak, acme, client):
    token = cli_access_token(keycloak, "olga", resource=OTHER_RESOURCE)  # aud: other-service

    response = me(client, token)

    assert response.status_code == 401
    assert "audience" in response.json()["error"]["message"].lower()


def test_a_token_with_a_tampered_payload_is_refused_with_401(keycloak, acme, client):
    token = cli_access_token(keycloak, "vera")
    header, _, signature = token.split(".")
    forged = keycloak.resign(token, claims={"groups": ["/tenants/acme/owner"]})
    forged_payload = forged.split(".")[1]

    response = me(client, f"{header}.{forged_payload}.{signature}")

    assert response.status_code == 401
    assert "signature" in response.json()["error"]["message"].lower()
    assert not Membership.objects.filter(user__username="vera").exists()


def test_an_id_token_is_not_accepted_as_a_bearer_token(keycloak, acme, client):
    # Signed by the realm, for the portal, unexpired: but an ID token, not an access token.
    id_token_like = keycloak.resign(
        cli_access_token(keycloak, "olga"), claims={"typ": None}, header_typ="JWT"
    )

    response = me(client, id_token_like)

    assert response.status_code == 401
    assert "not an access token" in response.json()["error"]["message"]


def test_unknown_signing_keys_refetch_the_jwks_at_most_once_a_minute(keycloak, acme, client):
    # A token naming a key the portal has not seen makes it fetch the realm's keys again
    # (Keycloak rotated them), but a flood of such tokens must not become a flood of fetches.
    token = cli_access_token(keycloak, "olga")
    assert me(client, token).status_code == 200
    assert keycloak.stats()["jwks"] == 1

    def refused(kid: str) -> None:
        response = me(client, keycloak.resign(token, kid=kid))
        assert response.status_code == 401
        assert "signing key" in response.json()["error"]["message"]

    refused("rotated-1")  # Keycloak may have rotated its keys: fetched again, once
    assert keycloak.stats()["jwks"] == 2
    refused("rotated-2")  # fetched a moment ago: not again
    assert keycloak.stats()["jwks"] == 2
    jwks_uri = f"{keycloak.issuer}/protocol/openid-connect/certs"  # a minute passes
    caching.delete("oidc-jwks-refetch", caching.key("oidc-jwks-refetch", jwks_uri))
    refused("rotated-3")
    assert keycloak.stats()["jwks"] == 3
    refused("rotated-4")
    assert keycloak.stats()["jwks"] == 3
    assert me(client, token).status_code == 200  # the known key still works


def test_a_revoked_personal_token_is_refused_with_401(keycloak, acme, client, django_user_model):
    user = django_user_model.objects.create_user("scripter")
    issued = api_token_create(user=user, name="ci")
    assert me(client, issued.raw).status_code == 200

    client.force_login(user)
    client.post(f"/account/tokens/{issued.token.pk}/revoke/", {"confirm": "ci"})
    client.logout()

    response = me(client, issued.raw)
    assert response.status_code == 401
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None


def test_bearer_tokens_while_keycloak_is_unreachable_get_503_not_500(
    keycloak, acme, client, settings, unused_tcp_port
):
    token = cli_access_token(keycloak, "olga")
    configure_portal_for(settings, f"http://127.0.0.1:{unused_tcp_port}/realms/ai-factory")

    response = me(client, token)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "provider_unavailable"


METHODS = ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"]
PATHS = ["/api/v1/me/", "/api/v1/tenants/", "/api/v1/tenants/acme/", "/api/v1/tokens/"]


def answers_with(client: APIClient, token: str) -> dict[tuple[str, str], int]:
    return {
        (method, path): client.generic(
            method,
            path,
            data="{}",
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        ).status_code
        for path in PATHS
        for method in METHODS
    }


@pytest.fixture
def introspect_every_request(settings):
    settings.OIDC_INTROSPECT_ACCESS_TOKENS = True
    settings.OIDC_INTROSPECTION_CACHE_SECONDS = 0


def test_a_keycloak_token_revoked_in_keycloak_is_refused_at_once_on_every_method(
    keycloak, acme, client, introspect_every_request
):
    token = cli_access_token(keycloak, "olga")
    before = answers_with(client, token)
    assert 401 not in before.values()
    assert before[("GET", "/api/v1/me/")] == 200

    # The script's owner revokes it at Keycloak (RFC 7009, as `portal-cli`); it has minutes left.
    revoked = requests.post(
        f"{keycloak.issuer}/protocol/openid-connect/revoke",
        data={"token": token, "client_id": "portal-cli"},
        timeout=10,
    )
    assert revoked.status_code == 200

    assert set(answers_with(client, token).values()) == {401}
    response = me(client, token)
    assert "revoked" in response.json()["error"]["message"]
    assert response["WWW-Authenticate"] == "Bearer"


def test_a_keycloak_token_of_a_user_disabled_in_keycloak_is_refused_at_once(
    keycloak, acme, client, introspect_every_request
):
    token = cli_access_token(keycloak, "mark")
    assert me(client, token).status_code == 200
    keycloak.update_user("mark", enabled=False)

    assert me(client, token).status_code == 401
    assert client.options("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401


def test_a_jwt_is_not_introspected_by_default(keycloak, acme, client):
    token = cli_access_token(keycloak, "olga")
    keycloak.update_user("olga", enabled=False)
    before = keycloak.stats()["introspection"]

    assert me(client, token).status_code == 200  # valid until it expires, as before
    assert keycloak.stats()["introspection"] == before
