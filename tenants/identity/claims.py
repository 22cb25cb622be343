"""Keycloak's claims → the portal's access model. Pure: plain dicts in, plain values out.

- Realm roles (`realm_access.roles`) and the portal client's roles
  (`resource_access.<client>.roles`) named in the rules become platform roles.
- Groups (`groups`, full paths) under the tenant prefix, `/tenants/<slug>/<owner|member|viewer>`,
  become tenant memberships; a user in several role groups of one tenant gets the strongest.

An absent claim means "none": Keycloak is the source of truth, and a realm that stops sending
groups must take access away rather than leave stale access in place.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.validators import DNS1123_LABEL

from ..access.models import Membership, RoleAssignment

# Strongest first: owner > member > viewer.
ROLE_STRENGTH = {
    Membership.Role.OWNER.value: 3,
    Membership.Role.MEMBER.value: 2,
    Membership.Role.VIEWER.value: 1,
}


@dataclass(frozen=True)
class ClaimRules:
    """How to read one realm's claims (from settings: OIDC_ROLE_*, OIDC_GROUP_PREFIX)."""

    client_id: str
    platform_admin_roles: frozenset[str] = frozenset({"platform-admin"})
    finance_roles: frozenset[str] = frozenset({"finance"})
    group_prefix: str = "/tenants/"


@dataclass(frozen=True)
class Grants:
    """What the claims grant: platform roles, and a role per tenant slug."""

    roles: frozenset[str] = frozenset()
    memberships: Mapping[str, str] = field(default_factory=dict)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str | Mapping) or not isinstance(value, Iterable):
        return []
    return [item for item in value if isinstance(item, str)]


def _roles_in(claims: Mapping[str, Any], client_id: str) -> set[str]:
    realm_access = claims.get("realm_access")
    resource_access = claims.get("resource_access")
    roles = set()
    if isinstance(realm_access, Mapping):
        roles.update(_strings(realm_access.get("roles")))
    if isinstance(resource_access, Mapping):
        client_access = resource_access.get(client_id)
        if isinstance(client_access, Mapping):
            roles.update(_strings(client_access.get("roles")))
    return roles


def _normalized_prefix(prefix: str) -> str:
    return "/" + prefix.strip("/") + "/"


def membership_from_group(path: str, group_prefix: str) -> tuple[str, str] | None:
    """(tenant slug, role) for a group path such as `/tenants/acme/owner`, else None."""
    path = "/" + path.strip().lstrip("/")
    prefix = _normalized_prefix(group_prefix)
    if not path.startswith(prefix):
        return None
    parts = path[len(prefix) :].split("/")
    if len(parts) != 2:
        return None
    slug, role = parts
    if role not in ROLE_STRENGTH or len(slug) > 63 or not DNS1123_LABEL.match(slug):
        return None
    return slug, role


def grants_from_claims(claims: Mapping[str, Any], rules: ClaimRules) -> Grants:
    """The platform roles and tenant memberships that `claims` grant under `rules`."""
    keycloak_roles = _roles_in(claims, rules.client_id)
    roles = set()
    if keycloak_roles & rules.platform_admin_roles:
        roles.add(RoleAssignment.Role.PLATFORM_ADMIN.value)
    if keycloak_roles & rules.finance_roles:
        roles.add(RoleAssignment.Role.FINANCE.value)

    memberships: dict[str, str] = {}
    for path in _strings(claims.get("groups")):
        found = membership_from_group(path, rules.group_prefix)
        if found is None:
            continue
        slug, role = found
        if ROLE_STRENGTH[role] > ROLE_STRENGTH.get(memberships.get(slug, ""), 0):
            memberships[slug] = role
    return Grants(roles=frozenset(roles), memberships=memberships)
