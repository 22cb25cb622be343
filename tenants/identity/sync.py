"""Keycloak identities: the portal user behind a `sub`, kept in step with Keycloak.

Services, each in one transaction and audited: at every sign-in (and for every new bearer token)
the user is found by `sub` (created at the first sign-in), their name and e-mail follow the
claims, and their Keycloak-sourced platform roles and tenant memberships are made to match the
claims exactly. Roles and memberships granted in the portal (source "local") are left alone.
"""

import logging
import re
from collections.abc import Mapping
from itertools import islice
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.audit import audit
from core.models import OidcIdentity

from ..access.models import Membership, RoleAssignment, Source, Tenant
from ..access.services import membership_remove, membership_set, role_grant, role_revoke
from .claims import ClaimRules, Grants

logger = logging.getLogger(__name__)
User = get_user_model()

_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]+")
_USERNAME_MAX = 150


def claim_rules() -> ClaimRules:
    """How this realm's claims map to access (OIDC_ROLE_*, OIDC_GROUP_PREFIX)."""
    return ClaimRules(
        client_id=settings.OIDC_RP_CLIENT_ID,
        platform_admin_roles=frozenset(settings.OIDC_ROLE_PLATFORM_ADMIN),
        finance_roles=frozenset(settings.OIDC_ROLE_FINANCE),
        group_prefix=settings.OIDC_GROUP_PREFIX,
    )


def _email_verified(claims: Mapping[str, Any]) -> bool:
    # Only Keycloak's own boolean counts: a string "true" from a custom mapper is not proof.
    return claims.get("email_verified") is True


def _profile(claims: Mapping[str, Any]) -> dict[str, str]:
    return {
        "email": str(claims.get("email") or "")[:254],
        "first_name": str(claims.get("given_name") or "")[:150],
        "last_name": str(claims.get("family_name") or "")[:150],
    }


def _username_candidates(claims: Mapping[str, Any], *, subject: str):
    """Keycloak's preferred_username, then variants that carry more of the `sub`, then counters.

    The last candidates are unique by construction, so a sign-in never fails on a name some
    other account (a local bootstrap account, or another Keycloak user) already holds.
    """
    wanted = _USERNAME_UNSAFE.sub("-", str(claims.get("preferred_username") or "")).strip("-")
    wanted = wanted[:_USERNAME_MAX] or f"user-{subject[:8]}"
    yield wanted
    tag = _USERNAME_UNSAFE.sub("-", subject).strip("-") or "sub"
    for length in (8, len(tag)):
        suffix = f"-{tag[:length]}"
        yield f"{wanted[: _USERNAME_MAX - len(suffix)]}{suffix}"
    for counter in range(2, 1000):
        suffix = f"-{tag[:8]}-{counter}"
        yield f"{wanted[: _USERNAME_MAX - len(suffix)]}{suffix}"


def _username_for(claims: Mapping[str, Any], *, subject: str, exclude_pk: int | None) -> str:
    """Keycloak's preferred_username if no other portal user holds it, else a unique variant.

    A local bootstrap account named like a Keycloak user keeps its name: the Keycloak user gets
    `<name>-<first 8 characters of sub>` (or a longer variant when that is taken too) instead,
    and is never matched to the local account.
    """
    others = User.objects.exclude(pk=exclude_pk) if exclude_pk else User.objects.all()
    for candidate in _username_candidates(claims, subject=subject):
        if not others.filter(username__iexact=candidate).exists():
            return candidate
    raise RuntimeError(f"no free username for Keycloak subject {subject}")


def _identity_create(*, subject: str, issuer: str, claims: Mapping[str, Any]) -> OidcIdentity:
    username = _username_for(claims, subject=subject, exclude_pk=None)
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, password=None, **_profile(claims))
    except IntegrityError:
        # Someone took the name between the check and the insert: the subject-only name is
        # unique to this person.
        username = list(islice(_username_candidates(claims, subject=subject), 3))[-1]
        user = User.objects.create_user(username=username, password=None, **_profile(claims))
    identity = OidcIdentity.objects.create(
        user=user, subject=subject, issuer=issuer, email_verified=_email_verified(claims)
    )
    audit(
        actor=None,
        action="user.create_from_keycloak",
        obj=user,
        changes={"username": username, "sub": subject, "issuer": issuer},
    )
    return identity


def _identity_refresh(identity: OidcIdentity, *, issuer: str, claims: Mapping[str, Any]) -> None:
    user = identity.user
    changes: dict[str, list[str]] = {}
    wanted = _profile(claims)
    if claims.get("preferred_username"):
        # Follow a rename in Keycloak only to a free name; a taken one keeps the current name.
        username = next(_username_candidates(claims, subject=identity.subject))
        others = User.objects.exclude(pk=user.pk)
        if username != user.username and not others.filter(username__iexact=username).exists():
            wanted["username"] = username
    for field, value in wanted.items():
        if getattr(user, field) != value:
            changes[field] = [getattr(user, field), value]
            setattr(user, field, value)
    if changes:
        user.save(update_fields=list(changes))
        audit(actor=None, action="user.update_from_keycloak", obj=user, changes=changes)
    identity.issuer, identity.last_seen_at = issuer, timezone.now()
    identity.email_verified = _email_verified(claims)
    identity.save(update_fields=["issuer", "last_seen_at", "email_verified"])


@transaction.atomic
def keycloak_user_sync(*, issuer: str, claims: Mapping[str, Any], grants: Grants):
    """The portal user for these (already verified) claims, with access synced to `grants`."""
    subject = str(claims["sub"])
    identity = (
        OidcIdentity.objects.select_for_update()
        .select_related("user")
        .filter(subject=subject)
        .first()
    )
    if identity is None:
        try:
            with transaction.atomic():
                identity = _identity_create(subject=subject, issuer=issuer, claims=claims)
        except IntegrityError:
            # A parallel first sign-in of the same person won the race: use its user.
            identity = OidcIdentity.objects.select_for_update().select_related("user").get(
                subject=subject
            )
    else:
        _identity_refresh(identity, issuer=issuer, claims=claims)
    keycloak_access_sync(user=identity.user, grants=grants)
    return identity.user


@transaction.atomic
def keycloak_access_sync(*, user, grants: Grants) -> None:
    """Make `user`'s Keycloak-sourced roles and memberships exactly what `grants` says.

    Groups naming a tenant the portal does not have are skipped (a platform admin creates
    tenants). A membership or role granted in the portal is never changed or removed here.
    """
    tenants = {t.slug: t for t in Tenant.objects.filter(slug__in=list(grants.memberships))}
    unknown = set(grants.memberships) - set(tenants)
    if unknown:
        logger.info("Keycloak groups name unknown tenants %s (user %s)", sorted(unknown), user)
    memberships = Membership.objects.filter(user=user).select_related("tenant")
    current = {m.tenant.slug: m for m in memberships}

    for slug, tenant in tenants.items():
        role = grants.memberships[slug]
        membership = current.get(slug)
        if membership is not None and membership.source == Source.LOCAL:
            continue
        if membership is None or membership.role != role:
            membership_set(actor=None, tenant=tenant, user=user, role=role, source=Source.KEYCLOAK)
    for slug, membership in current.items():
        if membership.source == Source.KEYCLOAK and slug not in tenants:
            membership_remove(actor=None, membership=membership)

    assignments = {a.role: a for a in RoleAssignment.objects.filter(user=user)}
    for role in sorted(grants.roles - set(assignments)):
        role_grant(actor=None, user=user, role=role, source=Source.KEYCLOAK)
    for role, assignment in assignments.items():
        if assignment.source == Source.KEYCLOAK and role not in grants.roles:
            role_revoke(actor=None, assignment=assignment)
