"""The production overlay and the shipped Keycloak realm name the same realm and clients, and
the directory client's service account holds exactly the roles the docs list."""

import json

from .rendering import DEPLOY, ROOT, of_kind, render

REALM = json.loads((DEPLOY / "keycloak" / "realm-export.json").read_text())


def _settings() -> dict[str, str]:
    (config,) = [c for c in of_kind(render("production"), "ConfigMap")
                 if c["metadata"]["name"].startswith("portal-settings")]
    return config["data"]


def _client(client_id: str) -> dict:
    (client,) = [c for c in REALM["clients"] if c["clientId"] == client_id]
    return client


def test_the_overlay_signs_in_through_the_shipped_realms_confidential_client():
    settings = _settings()
    assert settings["OIDC_ISSUER_URL"].endswith(f"/realms/{REALM['realm']}")
    client = _client(settings["OIDC_RP_CLIENT_ID"])
    assert client["publicClient"] is False and client["standardFlowEnabled"] is True
    assert f"{settings['PORTAL_URL']}/oidc/callback/" in client["redirectUris"]


def test_the_directory_client_is_a_service_account_with_read_only_roles():
    client_id = _settings()["KEYCLOAK_DIRECTORY_CLIENT_ID"]
    client = _client(client_id)
    assert client["serviceAccountsEnabled"] is True and client["publicClient"] is False
    assert not any(client.get(flow) for flow in
                   ("standardFlowEnabled", "implicitFlowEnabled", "directAccessGrantsEnabled"))
    (account,) = [u for u in REALM["users"] if u.get("serviceAccountClientId") == client_id]
    roles = account["clientRoles"]
    assert roles == {"realm-management": ["view-users", "query-groups"]}
    assert not account.get("realmRoles", [])
    documented = (ROOT / "docs" / "deployment.md").read_text()
    assert all(f"`{role}`" in documented for role in roles["realm-management"])
