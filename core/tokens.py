"""Personal API tokens: create (the raw value is shown once), revoke. Both are audited.

A token lives at most API_TOKEN_MAX_LIFETIME_DAYS from its creation (ApiToken.is_active), which
also ends tokens made before the cap existed or before it was lowered.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from .api.scopes import Scope, scopes_validated
from .audit import audit
from .models import ApiToken

DUPLICATE_NAME = "You already have an active token with this name."
DUPLICATE_NAME_OF_ACCOUNT = "This account already has an active token with this name."


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    raw: str


@transaction.atomic
def api_token_create(
    *,
    user,
    name: str,
    expires_at: datetime | None = None,
    scopes: Iterable[str] = (Scope.ADMIN,),
    actor: Any | None = None,
    tenant: Any | None = None,
) -> IssuedToken:
    """A token of `user` (made by `actor`, `user` when not given: a tenant owner makes a
    service account's, recorded in `tenant`'s audit trail)."""
    if actor is None and getattr(user, "service_account", None) is not None:
        # The reverse one-to-one of tenants' ServiceAccount, by its accessor (core imports no
        # app): a service account's tokens are made by its tenant's owners, never by itself.
        raise PermissionDenied("A service account's tokens are made by its tenant's owners.")
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the token a name, e.g. 'terraform' or 'ci'."})
    scopes = scopes_validated(scopes)
    duplicate = DUPLICATE_NAME if actor in (None, user) else DUPLICATE_NAME_OF_ACCOUNT
    now = timezone.now()
    if expires_at is not None and expires_at <= now:
        raise ValidationError({"expires_at": "The expiry must be in the future."})
    # Every token expires: no expiry asked means the longest allowed; longer is refused (not
    # silently shortened), so a script's owner knows when it will stop working.
    latest = now + timedelta(days=settings.API_TOKEN_MAX_LIFETIME_DAYS)
    if expires_at is None:
        expires_at = latest
    elif expires_at > latest + timedelta(minutes=1):
        raise ValidationError(
            {
                "expires_at": (
                    f"A token lives at most {settings.API_TOKEN_MAX_LIFETIME_DAYS} days: "
                    f"pick {latest:%Y-%m-%d %H:%M} UTC or earlier."
                )
            }
        )
    if ApiToken.objects.filter(user=user, name=name, revoked_at__isnull=True).exists():
        raise ValidationError({"name": duplicate})
    raw = ApiToken.generate()
    token = ApiToken(
        user=user, name=name, digest=ApiToken.digest_of(raw), hint=raw[:8], expires_at=expires_at,
        scopes=scopes,
    )
    token.full_clean()
    try:
        # A concurrent request may take the name between the check above and this insert: the
        # partial unique constraint decides, and the loser gets the same field error.
        with transaction.atomic():
            token.save()
    except IntegrityError:
        raise ValidationError({"name": duplicate}) from None
    audit(
        actor=actor or user,
        action="api_token.create",
        obj=token,
        tenant=tenant,
        changes={"name": name, "user": user.get_username(), "scopes": scopes,
                 "expires_at": expires_at.isoformat()},
    )
    return IssuedToken(token=token, raw=raw)


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor, tenant: Any | None = None) -> ApiToken:
    token = ApiToken.objects.select_for_update().select_related("user").get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit(actor=actor, action="api_token.revoke", obj=token, tenant=tenant,
              changes={"name": token.name, "user": token.user.get_username(),
                       "scopes": token.scopes})
    return token


def api_tokens_of(*, user):
    return ApiToken.objects.filter(user=user)
