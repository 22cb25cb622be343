"""Envoy Gateway's OIDC + JWT authorization, as the simulated gateway (`demo.gateway`) plays a
SecurityPolicy with `oidc` (a notebook's): the portal's own session stands in for Keycloak's.

Someone not signed in to the portal is sent to the portal's sign-in with `next` back to the URL
they asked for (Envoy's OIDC filter sends them to Keycloak, which sends them back through the
policy's redirect URL). Someone signed in has the token Keycloak would give them: its groups
claim holds the Keycloak group paths of their memberships, as the portal derives them
(`Tenant.keycloak_groups` with OIDC_GROUP_PREFIX): an owner's or member's the tenant's edit
groups, a viewer's its view groups. The policy's `authorization` then decides as Envoy's RBAC
filter does: the first rule whose JWT claims all hold one of their `values` gives its action,
else `defaultAction`; a denial is 403 "RBAC: access denied". The notebook's own token never
comes into it: the app runs with none.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse

from tenants.models import Membership

RBAC_DENIED = "RBAC: access denied"
EDIT_ROLES = frozenset({Membership.Role.OWNER, Membership.Role.MEMBER})


def token_claims(user: Any) -> dict[str, list[str]]:
    """The claims of the access token Keycloak would give `user` that policies look at."""
    groups: list[str] = []
    for membership in Membership.objects.filter(user=user).select_related("tenant"):
        paths = membership.tenant.keycloak_groups(prefix=settings.OIDC_GROUP_PREFIX)
        groups += paths["edit"] if membership.role in EDIT_ROLES else paths["view"]
    return {"groups": groups}


def _matches(rule: dict[str, Any], claims: dict[str, list[str]]) -> bool:
    wanted = ((rule.get("principal") or {}).get("jwt") or {}).get("claims") or []
    return bool(wanted) and all(
        set(claim.get("values") or []) & set(claims.get(claim.get("name", ""), []))
        for claim in wanted
    )


def authorized(policy: dict[str, Any], claims: dict[str, list[str]]) -> bool:
    """Envoy's RBAC over the policy's `authorization`: the first matching rule's action, else
    the default (Allow when the policy says nothing)."""
    authorization = policy.get("authorization") or {}
    for rule in authorization.get("rules") or []:
        if _matches(rule, claims):
            return rule.get("action") == "Allow"
    return authorization.get("defaultAction", "Allow") == "Allow"


def sign_in_refusal(request: HttpRequest, policy: dict[str, Any]) -> HttpResponse | None:
    """None when the person may pass; else the sign-in redirect, or RBAC's 403."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
    if not authorized(policy, token_claims(request.user)):
        return HttpResponse(RBAC_DENIED, status=403, content_type="text/plain")
    return None
