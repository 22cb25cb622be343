"""Keycloak claims → platform roles and tenant memberships: the pure mapping, with plain dicts."""

import pytest

from tenants.identity.claims import ClaimRules, Grants, grants_from_claims, membership_from_group

RULES = ClaimRules(client_id="portal")


def test_realm_roles_grant_platform_roles():
    claims = {"realm_access": {"roles": ["default-roles-ai-factory", "finance"]}}

    assert grants_from_claims(claims, RULES) == Grants(roles=frozenset({"finance"}))


def test_roles_of_the_portal_client_grant_platform_roles():
    claims = {"resource_access": {"portal": {"roles": ["platform-admin", "finance"]}}}

    assert grants_from_claims(claims, RULES).roles == {"platform_admin", "finance"}


def test_roles_of_other_clients_grant_nothing():
    claims = {
        "resource_access": {
            "account": {"roles": ["platform-admin", "manage-account"]},
            "grafana": {"roles": ["finance"]},
        }
    }

    assert grants_from_claims(claims, RULES).roles == frozenset()


def test_role_names_come_from_the_rules():
    rules = ClaimRules(
        client_id="ai-portal",
        platform_admin_roles=frozenset({"gpu-ops", "sre"}),
        finance_roles=frozenset({"billing"}),
    )
    claims = {
        "realm_access": {"roles": ["sre", "platform-admin"]},
        "resource_access": {"ai-portal": {"roles": ["billing"]}, "portal": {"roles": ["finance"]}},
    }

    assert grants_from_claims(claims, rules).roles == {"platform_admin", "finance"}


def test_group_paths_become_memberships():
    claims = {
        "groups": [
            "/tenants/acme/owner",
            "/tenants/globex/viewer",
            "/staff",
            "/tenants",
            "/tenants/acme",
        ]
    }

    assert grants_from_claims(claims, RULES).memberships == {"acme": "owner", "globex": "viewer"}


def test_the_strongest_role_wins_when_a_user_is_in_several_groups_of_a_tenant():
    claims = {
        "groups": [
            "/tenants/acme/viewer",
            "/tenants/acme/owner",
            "/tenants/acme/member",
            "/tenants/globex/viewer",
            "/tenants/globex/member",
        ]
    }

    assert grants_from_claims(claims, RULES).memberships == {"acme": "owner", "globex": "member"}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/tenants/acme/member", ("acme", "member")),
        ("tenants/acme/member", ("acme", "member")),  # "Full group path" off gives no slash
        ("/tenants/acme/admin", None),  # not a portal role
        ("/tenants/Acme/member", None),  # not a tenant slug
        ("/tenants/acme/member/extra", None),
        ("/tenants//member", None),
        ("/other/acme/member", None),
        ("/tenantsx/acme/member", None),
        ("/tenants/" + "a" * 64 + "/member", None),
    ],
)
def test_group_path_parsing(path, expected):
    assert membership_from_group(path, "/tenants/") == expected


def test_the_group_prefix_comes_from_the_rules():
    rules = ClaimRules(client_id="portal", group_prefix="ai-factory/teams")
    claims = {"groups": ["/ai-factory/teams/acme/member", "/tenants/globex/owner"]}

    assert grants_from_claims(claims, rules).memberships == {"acme": "member"}


def test_absent_claims_grant_nothing():
    assert grants_from_claims({"sub": "x"}, RULES) == Grants()


@pytest.mark.parametrize(
    "claims",
    [
        {"realm_access": ["platform-admin"], "groups": "/tenants/acme/owner"},
        {"realm_access": {"roles": "platform-admin"}, "groups": {"/tenants/acme/owner": 1}},
        {"resource_access": {"portal": ["platform-admin"]}, "groups": [None, 3]},
        {"resource_access": "portal", "realm_access": None, "groups": None},
    ],
)
def test_malformed_claims_grant_nothing(claims):
    assert grants_from_claims(claims, RULES) == Grants()
