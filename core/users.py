"""People's accounts as platform admins edit them in Django admin: every change audited.

`is_superuser` makes a platform admin (the access rules say so), so granting it is a decision
like any other, with who did it on record. Passwords are never recorded, only that one was set.
"""

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from .audit import audit

User = get_user_model()
TRACKED = ("username", "email", "first_name", "last_name", "is_active", "is_staff", "is_superuser")


@transaction.atomic
def user_save(*, actor: Any | None, user, changed: list[str]) -> Any:
    """Save an account filled in by an admin form (already validated)."""
    before = User.objects.select_for_update().filter(pk=user.pk).first() if user.pk else None
    user.save()
    changes: dict[str, Any] = {
        name: [None if before is None else getattr(before, name), getattr(user, name)]
        for name in TRACKED
        if before is None or getattr(before, name) != getattr(user, name)
    }
    if "password" in changed or (before is not None and before.password != user.password):
        changes["password"] = "set"  # noqa: S105 - that it was set, never the password
    if changes:
        audit(actor=actor, action="user.update" if before else "user.create", obj=user,
              changes=changes)
    return user


@transaction.atomic
def user_delete(*, actor: Any | None, user) -> None:
    audit(actor=actor, action="user.delete", obj=user, changes={"username": user.get_username()})
    user.delete()


@transaction.atomic
def lockouts_clear(*, actor: Any | None, attempts) -> int:
    """Lift sign-in lock-outs (django-axes' attempts): the people may try again at once."""
    cleared = [(a.username, a.ip_address) for a in attempts]
    for attempt in attempts:
        attempt.delete()
    if cleared:
        audit(actor=actor, action="signin.lockouts_clear", obj=None,
              changes={"cleared": [f"{u} from {ip}" for u, ip in cleared]})
    return len(cleared)
