"""Token scopes: what a scoped credential (a personal or service-account API token, a Keycloak
client-credentials token of a service account) may do, whatever its user's role allows.

Each API view declares the scope its reads and its writes need (`read_scope`, `write_scope`;
`action_scopes` for a viewset action that differs, e.g. a POST that only computes); the
defaults are `read` and `admin`. Browser sessions and Keycloak user tokens carry no scopes:
the user's role alone decides for them. The role still decides for a scoped token as well: a
scope only ever takes rights away.
"""

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import models
from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission


class Scope(models.TextChoices):
    READ = "read", "Read only"
    WORKLOADS = "workloads", "Workloads"
    BILLING_READ = "billing:read", "Billing read"
    ADMIN = "admin", "Admin"


SCOPE_HELP = {
    Scope.READ: "Every read outside billing: tenants, quota, workloads, inventory (not a "
    "vCluster's kubeconfig).",
    Scope.WORKLOADS: "Launch, scale, stop and delete workloads and what they own (their "
    "endpoint keys), download a vCluster's kubeconfig; includes read.",
    Scope.BILLING_READ: "Billing reads: spend, usage, rates, invoices and their exports.",
    Scope.ADMIN: "Everything your role allows, including the other scopes.",
}

# What each scope grants besides itself.
IMPLIES: dict[str, frozenset[str]] = {
    Scope.ADMIN: frozenset(Scope.values),
    Scope.WORKLOADS: frozenset({Scope.READ}),
}

DEFAULT_READ_SCOPE = Scope.READ
DEFAULT_WRITE_SCOPE = Scope.ADMIN


def scopes_granted(scopes: Iterable[str]) -> frozenset[str]:
    """`scopes` with everything they imply."""
    granted: set[str] = set()
    for scope in scopes:
        granted |= {scope, *IMPLIES.get(scope, ())}
    return frozenset(granted)


def scopes_normalized(scopes: Iterable[str]) -> list[str]:
    """Known scope values, each once, in the order of Scope (how they are stored)."""
    wanted = set(scopes)
    return [value for value in Scope.values if value in wanted]


def scopes_validated(scopes: Iterable[str], *, required: bool = True) -> list[str]:
    """`scopes` as stored (scopes_normalized), or a field error on `scopes`."""
    scopes = list(scopes)
    unknown = sorted(set(map(str, scopes)) - set(Scope.values))
    if unknown:
        raise ValidationError({"scopes": [f"Unknown scope {unknown[0]!r}: pick from "
                                          f"{', '.join(Scope.values)}."]})
    if required and not scopes:
        raise ValidationError({"scopes": ["Pick at least one scope."]})
    return scopes_normalized(scopes)


def required_scope(view, method: str) -> str:
    """The scope `method` on `view` needs (an action's own, else the view's read or write)."""
    action = getattr(view, "action", None)
    own = getattr(view, "action_scopes", {}).get(action)
    if own:
        return own
    if method.upper() in SAFE_METHODS:
        return getattr(view, "read_scope", DEFAULT_READ_SCOPE)
    return getattr(view, "write_scope", DEFAULT_WRITE_SCOPE)


class ScopedClaims(dict):
    """A Keycloak token's claims as `request.auth` when it acts as a service account: the
    claims, with the `scopes` that account gives its client's tokens."""

    def __init__(self, claims: dict, *, scopes: Iterable[str]) -> None:
        super().__init__(claims)
        self.scopes = list(scopes)


class MissingScope(exceptions.PermissionDenied):
    default_code = "missing_scope"

    def __init__(self, scope: str) -> None:
        super().__init__(f'This token lacks the "{scope}" scope.', code="missing_scope")
        self.scope = scope


class TokenScopes(BasePermission):
    """A request made with a scoped credential (its `request.auth` has `scopes`) needs the
    scope the view declares for it. Others (sessions, Keycloak user tokens) pass: their role
    decides."""

    def has_permission(self, request, view) -> bool:
        scopes = getattr(request.auth, "scopes", None)
        if scopes is None:
            return True
        needed = required_scope(view, request.method)
        if needed not in scopes_granted(scopes):
            raise MissingScope(needed)
        return True
