"""Keeping Keycloak-sourced users in step with Keycloak between their sign-ins (services).

Claims arrive only at sign-in, so a user removed from a group, stripped of a role, disabled or
deleted in Keycloak would keep access through personal API tokens. `keycloak_directory_sync`
pulls the directory (directory.py, read by directory_read.py) and, for every portal user linked to a
Keycloak `sub`:

- builds the claims Keycloak would put in their token now (`groups`, `realm_access`,
  `resource_access`) and maps them with the sign-in's own `grants_from_claims`, then
  `keycloak_access_sync` (the sign-in's service) makes their Keycloak-sourced memberships and
  roles match; memberships and roles granted in the portal are left alone;
- deactivates a user Keycloak answers 404 for (deleted) or reports `enabled: false`, and
  revokes their personal API tokens, each change audited.

What counts: direct members of `<prefix><slug>/<role>` groups, and the realm and portal-client
roles mapped to each user directly (their role mappings: all the realm export's `view-users`
reads). Subgroups never count (sign-in ignores them too). Composite roles and roles inherited
through a group are not direct mappings, so the sync does not honour them: map the portal's
roles to users directly (docs/keycloak.md).

Safety: everything is read before anything is written, and only a complete read is acted on.
Reads run KEYCLOAK_DIRECTORY_CONCURRENCY at a time within KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT less
a minute for the writes; a run that runs out of time or meets a failure changes nothing for
anyone, logs and audits the cause, and keeps what it read: the next run resumes the read where
it stopped (directory_read.py; a read older than KEYCLOAK_DIRECTORY_READ_MAX_AGE starts over).
So a large realm behind a slow Keycloak completes over a few runs, and nobody loses access from
part of the directory. A directory that answers 404 for every linked user at once (more than one)
is treated as misconfigured, not as everyone leaving. Deactivation is sticky: re-enabling a user
in Keycloak does not reactivate the portal account (a platform admin does, in Django admin);
revoked tokens stay revoked.
"""

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core.audit import audit
from core.models import ApiToken, OidcIdentity

from ..access.models import Tenant
from .claims import ROLE_STRENGTH, Grants, grants_from_claims
from .directory import DirectoryUnavailable, DirectoryUser, directory_configured
from .directory_read import DirectorySnapshot, directory_read, directory_read_discard
from .sync import claim_rules, keycloak_access_sync

logger = logging.getLogger(__name__)
User = get_user_model()


@dataclass
class DirectorySyncResult:
    """What one run did (or why it did nothing)."""

    configured: bool = True
    ok: bool = True
    error: str = ""
    users: int = 0
    deactivated: list[str] = field(default_factory=list)
    tokens_revoked: int = 0
    runs: int = 0  # how many runs the complete read it applied took


def _read_directory(subjects: list[str]) -> DirectorySnapshot:
    prefix = "/" + claim_rules().group_prefix.strip("/")
    paths = [
        f"{prefix}/{slug}/{role}"
        for slug in Tenant.objects.order_by("slug").values_list("slug", flat=True)
        for role in ROLE_STRENGTH
    ]
    return directory_read(paths=paths, subjects=subjects)


def _claims_of(subject: str, snapshot: DirectorySnapshot) -> dict:
    """The claims Keycloak's mappers would issue for `subject` now (for grants_from_claims)."""
    roles = snapshot.roles[subject]
    client_id = settings.OIDC_RP_CLIENT_ID
    return {
        "sub": subject,
        "groups": sorted(p for p, members in snapshot.groups.items() if subject in members),
        "realm_access": {"roles": sorted(roles.realm)},
        "resource_access": {client_id: {"roles": sorted(roles.clients.get(client_id, ()))}},
    }


@transaction.atomic
def keycloak_user_deactivate(*, identity: OidcIdentity, reason: str) -> int:
    """Deactivate a user Keycloak disabled or deleted; revoke their tokens. Returns how many."""
    user = User.objects.select_for_update().get(pk=identity.user_id)
    if user.is_active:
        user.is_active = False
        user.save(update_fields=["is_active"])
        audit(
            actor=None,
            action="user.deactivate_from_keycloak",
            obj=user,
            changes={"sub": identity.subject, "reason": reason},
        )
    now = timezone.now()
    revoked = 0
    for token in ApiToken.objects.select_for_update().filter(user=user, revoked_at__isnull=True):
        token.revoked_at = now
        token.save(update_fields=["revoked_at"])
        audit(
            actor=None,
            action="api_token.revoke",
            obj=token,
            changes={"name": token.name, "reason": f"user {reason} in Keycloak"},
        )
        revoked += 1
    return revoked


@transaction.atomic
def _identity_follow(identity: OidcIdentity, found: DirectoryUser) -> None:
    user = identity.user
    changes = {}
    if found.email and found.email != user.email:
        changes["email"] = [user.email, found.email]
        user.email = found.email
        user.save(update_fields=["email"])
    if identity.email_verified != found.email_verified:
        changes["email_verified"] = [identity.email_verified, found.email_verified]
        identity.email_verified = found.email_verified
        identity.save(update_fields=["email_verified"])
    if changes:
        audit(actor=None, action="user.update_from_keycloak", obj=user, changes=changes)


@transaction.atomic
def keycloak_user_reconcile(
    *, identity: OidcIdentity, found: DirectoryUser | None, grants: Grants
) -> int:
    """One user made to match the directory: deactivated (tokens revoked) when deleted or
    disabled there, profile and Keycloak-sourced access following it. Returns tokens revoked.

    A deleted user is in no group and holds no role any more, so their Keycloak-sourced
    memberships and roles go too, and member lists stop showing them.
    """
    revoked = 0
    if found is None or not found.enabled:
        reason = "deleted" if found is None else "disabled"
        revoked = keycloak_user_deactivate(identity=identity, reason=reason)
    if found is not None:
        _identity_follow(identity, found)
    keycloak_access_sync(user=identity.user, grants=grants)
    return revoked


def _record_failure(error: str) -> None:
    logger.error("Keycloak directory sync failed, nothing changed: %s", error)
    audit(actor=None, action="keycloak.directory_sync_failed", changes={"error": error[:500]})


def keycloak_directory_sync() -> DirectorySyncResult:
    """Reconcile every Keycloak-sourced user with the directory (a no-op when unconfigured)."""
    if not directory_configured():
        return DirectorySyncResult(configured=False)
    identities = list(OidcIdentity.objects.select_related("user").order_by("pk"))
    subjects = [identity.subject for identity in identities]
    try:
        snapshot = _read_directory(subjects)
    except DirectoryUnavailable as exc:
        _record_failure(str(exc))
        return DirectorySyncResult(ok=False, error=str(exc))
    gone = [s for s, found in snapshot.users.items() if found is None]
    if len(subjects) > 1 and len(gone) == len(subjects):
        error = f"Keycloak answered 404 for all {len(subjects)} linked users: misconfigured?"
        directory_read_discard()  # not to be resumed: the next run asks again
        _record_failure(error)
        return DirectorySyncResult(ok=False, error=error)

    result = DirectorySyncResult(users=len(identities))
    rules = claim_rules()
    for identity in identities:
        found = snapshot.users[identity.subject]
        was_active = identity.user.is_active
        result.tokens_revoked += keycloak_user_reconcile(
            identity=identity,
            found=found,
            grants=grants_from_claims(_claims_of(identity.subject, snapshot), rules),
        )
        if was_active and (found is None or not found.enabled):
            result.deactivated.append(identity.user.get_username())
    directory_read_discard()  # applied: the next run reads the directory afresh
    result.runs = snapshot.runs
    logger.info(
        "Keycloak directory sync: %d users, deactivated %s, %d tokens revoked (read in %d runs)",
        result.users,
        result.deactivated or "none",
        result.tokens_revoked,
        result.runs,
    )
    return result
