"""Personal API tokens: create (the raw value is shown once), revoke. Both are audited."""

from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from .audit import audit
from .models import ApiToken

DUPLICATE_NAME = "You already have an active token with this name."


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    raw: str


@transaction.atomic
def api_token_create(*, user, name: str, expires_at: datetime | None = None) -> IssuedToken:
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the token a name, e.g. 'terraform' or 'ci'."})
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": "The expiry must be in the future."})
    if ApiToken.objects.filter(user=user, name=name, revoked_at__isnull=True).exists():
        raise ValidationError({"name": DUPLICATE_NAME})
    raw = ApiToken.generate()
    token = ApiToken(
        user=user, name=name, digest=ApiToken.digest_of(raw), hint=raw[:8], expires_at=expires_at
    )
    token.full_clean()
    try:
        # A concurrent request may take the name between the check above and this insert: the
        # partial unique constraint decides, and the loser gets the same field error.
        with transaction.atomic():
            token.save()
    except IntegrityError:
        raise ValidationError({"name": DUPLICATE_NAME}) from None
    audit(
        actor=user,
        action="api_token.create",
        obj=token,
        changes={"name": name, "expires_at": expires_at.isoformat() if expires_at else None},
    )
    return IssuedToken(token=token, raw=raw)


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor) -> ApiToken:
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit(actor=actor, action="api_token.revoke", obj=token, changes={"name": token.name})
    return token


def api_tokens_of(*, user):
    return ApiToken.objects.filter(user=user)
