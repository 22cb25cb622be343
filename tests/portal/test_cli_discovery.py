"""/.well-known/portalctl.json: where portalctl signs in for this portal, public like the
issuer's own discovery document (the device sign-in itself is tested in tests/portalctl)."""

import pytest


@pytest.mark.django_db
def test_it_names_the_issuer_and_the_cli_client_to_anyone(client, settings):
    settings.OIDC_ISSUER_URL = "https://sso.example.com/realms/ai-factory"
    settings.OIDC_CLI_CLIENT_ID = "our-cli"
    response = client.get("/.well-known/portalctl.json")
    assert response.status_code == 200
    assert response.json() == {
        "issuer": "https://sso.example.com/realms/ai-factory",
        "client_id": "our-cli",
        "api": "http://testserver/api/v1/",
    }


@pytest.mark.django_db
def test_without_a_sign_in_provider_it_says_tokens_only(client, settings):
    settings.OIDC_ISSUER_URL = ""
    assert client.get("/.well-known/portalctl.json").json()["issuer"] == ""
    assert client.post("/.well-known/portalctl.json").status_code == 405
