"""The shipped Keycloak realm export (deploy/keycloak/realm-export.json) fits the portal's
settings: the callback and logout URLs, PKCE, the roles and groups the portal maps, and the
mappers that put them into the ID token, userinfo and access token."""

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from tenants.identity.claims import membership_from_group

REALM = json.loads(
    (Path(__file__).resolve().parents[2] / "deploy" / "keycloak" / "realm-export.json").read_text()
)
CLIENTS = {client["clientId"]: client for client in REALM["clients"]}
PORTAL = CLIENTS["portal"]


def mappers(client: dict) -> dict[str, dict]:
    return {m["protocolMapper"]: m["config"] for m in client["protocolMappers"]}


def leaf_paths(groups: list[dict]) -> list[str]:
    paths = []
    for group in groups:
        paths += leaf_paths(group["subGroups"]) if group["subGroups"] else [group["path"]]
    return paths


def test_the_portal_client_is_confidential_with_pkce_and_the_portals_urls():
    assert PORTAL["publicClient"] is False
    assert PORTAL["standardFlowEnabled"] is True
    assert PORTAL["implicitFlowEnabled"] is False
    assert PORTAL["directAccessGrantsEnabled"] is False
    assert PORTAL["attributes"]["pkce.code.challenge.method"] == "S256"
    assert [uri.removeprefix(PORTAL["rootUrl"]) for uri in PORTAL["redirectUris"]] == [
        reverse("oidc_authentication_callback")
    ]
    logout = PORTAL["attributes"]["post.logout.redirect.uris"]
    assert logout.removeprefix(PORTAL["rootUrl"]) == reverse(settings.LOGOUT_REDIRECT_URL)
    assert "secret" not in PORTAL  # Keycloak generates it at import


@pytest.mark.parametrize(
    "mapper",
    [
        "oidc-usermodel-realm-role-mapper",
        "oidc-usermodel-client-role-mapper",
        "oidc-group-membership-mapper",
    ],
)
def test_roles_and_groups_reach_the_id_token_userinfo_and_access_token(mapper):
    config = mappers(PORTAL)[mapper]

    assert config["id.token.claim"] == "true"
    assert config["userinfo.token.claim"] == "true"
    assert config["access.token.claim"] == "true"


def test_the_mappers_write_the_claims_the_portal_reads():
    portal_mappers = mappers(PORTAL)
    assert portal_mappers["oidc-usermodel-realm-role-mapper"]["claim.name"] == "realm_access.roles"
    client_roles = portal_mappers["oidc-usermodel-client-role-mapper"]
    assert client_roles["claim.name"] == "resource_access.${client_id}.roles"
    assert client_roles["usermodel.clientRoleMapping.clientId"] == "portal"
    groups = portal_mappers["oidc-group-membership-mapper"]
    assert (groups["claim.name"], groups["full.path"]) == ("groups", "true")


@pytest.mark.parametrize("client_id", ["portal", "portal-cli"])
def test_access_tokens_of_both_clients_carry_the_portal_audience(client_id):
    audience = mappers(CLIENTS[client_id])["oidc-audience-mapper"]

    assert audience["included.client.audience"] == "portal"
    assert audience["access.token.claim"] == "true"


def test_the_realm_has_the_roles_the_portal_maps():
    realm_roles = {role["name"] for role in REALM["roles"]["realm"]}
    client_roles = {role["name"] for role in REALM["roles"]["client"]["portal"]}

    for names in (settings.OIDC_ROLE_PLATFORM_ADMIN, settings.OIDC_ROLE_FINANCE):
        assert set(names) <= realm_roles
        assert set(names) <= client_roles


def test_every_tenant_group_maps_to_a_membership():
    tenant_groups = [
        path for path in leaf_paths(REALM["groups"]) if path.startswith(settings.OIDC_GROUP_PREFIX)
    ]

    assert sorted(membership_from_group(p, settings.OIDC_GROUP_PREFIX) for p in tenant_groups) == [
        ("acme", "member"),
        ("acme", "owner"),
        ("acme", "viewer"),
    ]


def test_the_directory_sync_client_is_a_read_only_service_account():
    directory = CLIENTS["portal-directory"]
    assert directory["publicClient"] is False
    assert directory["serviceAccountsEnabled"] is True
    assert not directory["standardFlowEnabled"] and not directory["directAccessGrantsEnabled"]
    assert "secret" not in directory
    users = REALM["users"]
    (account,) = [u for u in users if u.get("serviceAccountClientId") == "portal-directory"]
    assert account["clientRoles"] == {"realm-management": ["view-users", "query-groups"]}
    assert "realmRoles" not in account
