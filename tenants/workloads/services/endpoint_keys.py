"""API keys of inference endpoints: create (the key is shown once), revoke, rotate (the old key
working on for a grace period, or not); their delivery to the gateway by the endpoint's
reconcile, and the end of a rotated key's grace.

A key is a random token; the portal keeps its SHA-256 digest and its first characters. The
gateway needs the key itself, in a Secret: until the reconcile has created that Secret the key
stays sealed on its row (`core.sealed`), so a cluster that refuses or does not answer leaves the
key recorded and retried; once the Secret exists the sealed copy is cleared. Revoking drops the
key from the endpoint's SecurityPolicy and deletes its Secret. Every change bumps the endpoint's
desired version: the reconcile applies the policy that names exactly the active keys.

A rotated key's grace ends at its `expires_at`, level-triggered: the reconcile treats a key
past it as revoked (out of the policy, its Secret deleted, the revocation recorded and audited
as `endpoint_key.expire`, by nobody), and `endpoint_keys_expire` (from the workloads' reconcile
sweep, every two minutes) records the expiries due and bumps their endpoints, so that the key
leaves the gateway within minutes even when nothing else changes.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass, replace
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from core.audit import audit
from core.errors import RuleViolation
from core.fleet import FleetGateway
from core.queueing import enqueue_on_commit
from core.reconcile import reconcile_bump
from core.sealed import InvalidToken, open_sealed, seal

from ..endpoint_keys import (
    DEFAULT_ROTATION_GRACE_HOURS,
    ROTATION_GRACE_HOURS,
    EndpointKey,
    secret_missing,
)
from ..kinds import inference
from ..kinds.base import BuildContext
from ..kinds.inference import exposure
from ..models import Workload
from .lifecycle import RECONCILE, _locked_live

logger = logging.getLogger(__name__)

DUPLICATE_NAME = "The endpoint already has an active key with this name."
EXPIRE_BATCH = 500  # per sweep; the next one takes the rest


@dataclass(frozen=True)
class IssuedKey:
    """A key just made: `raw` is shown to its creator this once, and never again."""

    key: EndpointKey
    raw: str


def digest_of(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _generate() -> str:
    return EndpointKey.PREFIX + secrets.token_urlsafe(32)


def _endpoint(workload_id: int, actor, what: str) -> Workload:
    workload = _locked_live(workload_id, actor=actor, what=what)
    if workload.kind != inference.KIND.KEY:
        raise RuleViolation(f"{workload} has no API keys: only inference endpoints do.")
    return workload


def _changed(workload: Workload) -> None:
    """The endpoint's policy names other keys now: apply it again after commit."""
    reconcile_bump(Workload.objects.filter(pk=workload.pk))
    enqueue_on_commit(RECONCILE, workload.pk, cluster=workload.cluster_id)


def _issue(workload: Workload, *, actor, name: str) -> IssuedKey:
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": ["Give the key a name, e.g. 'chat-app' or 'ci'."]})
    if workload.endpoint_keys.filter(name=name, revoked_at__isnull=True,
                                     expires_at__isnull=True).exists():
        raise ValidationError({"name": [DUPLICATE_NAME]})
    raw = _generate()
    key = EndpointKey(workload=workload, name=name, digest=digest_of(raw), hint=raw[:8],
                      sealed=seal(raw), created_by=actor if getattr(actor, "pk", None) else None)
    key.full_clean(exclude=["workload", "created_by"])
    try:
        with transaction.atomic():  # a concurrent create may take the name: the constraint decides
            key.save()
    except IntegrityError:
        raise ValidationError({"name": [DUPLICATE_NAME]}) from None
    return IssuedKey(key=key, raw=raw)


@transaction.atomic
def endpoint_key_create(*, workload_id: int, actor, name: str) -> IssuedKey:
    """An owner or member makes a key for a live endpoint; the gateway has it after the
    reconcile (moments later)."""
    workload = _endpoint(workload_id, actor, "manage endpoint keys")
    issued = _issue(workload, actor=actor, name=name)
    audit(actor=actor, action="endpoint_key.create", obj=issued.key, tenant=workload.tenant,
          changes={"workload": workload.name, "name": issued.key.name, "hint": issued.key.hint})
    _changed(workload)
    return issued


def _revoke(key: EndpointKey, actor) -> None:
    key.revoked_at, key.revoked_by = timezone.now(), actor if getattr(actor, "pk", None) else None
    key.sealed = ""  # a key revoked before its Secret existed is never delivered
    key.save(update_fields=["revoked_at", "revoked_by", "sealed"])


def _active_key(workload: Workload, key_id: int) -> EndpointKey:
    key = EndpointKey.objects.select_for_update().filter(workload=workload, pk=key_id).first()
    if key is None:
        raise EndpointKey.DoesNotExist
    if not key.is_active:
        raise RuleViolation(
            f"The key “{key.name}” is already {'expired' if key.expired else 'revoked'}.")
    return key


@transaction.atomic
def endpoint_key_revoke(*, workload_id: int, key_id: int, actor) -> EndpointKey:
    """Revoke a key: the gateway refuses it once the reconcile has applied the policy without
    it (moments later), and its Secret is deleted."""
    workload = _endpoint(workload_id, actor, "manage endpoint keys")
    key = _active_key(workload, key_id)
    _revoke(key, actor)
    audit(actor=actor, action="endpoint_key.revoke", obj=key, tenant=workload.tenant,
          changes={"workload": workload.name, "name": key.name, "hint": key.hint})
    _changed(workload)
    return key


@transaction.atomic
def endpoint_key_rotate(*, workload_id: int, key_id: int, actor,
                        grace_hours: int = DEFAULT_ROTATION_GRACE_HOURS) -> IssuedKey:
    """Replace a key by a new one of the same name (shown once). The old one keeps working for
    `grace_hours` (one of ROTATION_GRACE_HOURS), so that its callers can swap keys before it
    stops; 0 revokes it at once. It can still be revoked by hand meanwhile. A key whose Secret
    is gone from the cluster is revoked at once whatever the grace: a policy naming a missing
    Secret refuses every key, the new one's too."""
    if grace_hours not in ROTATION_GRACE_HOURS:
        raise ValidationError({"grace_hours": [
            f"Pick one of: {', '.join(map(str, ROTATION_GRACE_HOURS))} (hours)."]})
    workload = _endpoint(workload_id, actor, "manage endpoint keys")
    old = _active_key(workload, key_id)
    if old.expiring:
        raise RuleViolation(f"The key “{old.name}” is already replaced: it stops working at "
                            f"{old.expires_at:%Y-%m-%d %H:%M %Z}. Revoke it to stop it now.")
    if secret_missing(workload=workload, key=old):
        grace_hours = 0
    now = timezone.now()
    if grace_hours:
        old.expires_at = now + timedelta(hours=grace_hours)
        old.save(update_fields=["expires_at"])  # its name is free for the new key
    else:
        _revoke(old, actor)
    issued = _issue(workload, actor=actor, name=old.name)
    old.replaced_by = issued.key
    old.save(update_fields=["replaced_by"])
    audit(actor=actor, action="endpoint_key.rotate", obj=issued.key, tenant=workload.tenant,
          changes={"workload": workload.name, "name": old.name, "replaced": old.hint,
                   "hint": issued.key.hint, "grace_hours": grace_hours,
                   "expires_at": (old.expires_at or now).isoformat()})
    _changed(workload)
    return issued


def _expire(keys: QuerySet[EndpointKey]) -> list[EndpointKey]:
    """Record as revoked, by nobody, those of `keys` past their grace, each audited. Locked,
    and skipped when locked already (a revoke by hand, or another sweep, is deciding it); one
    revoked meanwhile is not due any more."""
    due = list(keys.filter(revoked_at__isnull=True, expires_at__lte=timezone.now())
               .select_for_update(skip_locked=True, of=("self",))
               .select_related("workload__tenant").order_by("pk")[:EXPIRE_BATCH])
    for key in due:
        # Its revocation is the moment its grace ended, however late this runs.
        key.revoked_at, key.sealed = key.expires_at, ""
        key.save(update_fields=["revoked_at", "sealed"])
        audit(actor=None, action="endpoint_key.expire", obj=key, tenant=key.workload.tenant,
              changes={"workload": key.workload.name, "name": key.name, "hint": key.hint,
                       "expires_at": key.expires_at.isoformat()})
    return due


@transaction.atomic
def endpoint_keys_expire() -> list[int]:
    """The keys whose grace has ended: their revocation recorded, their endpoints' desired
    version bumped. Returns the endpoints', which the workloads' reconcile sweep (the caller)
    then queues with every other workload not applied yet."""
    workload_ids = sorted({key.workload_id for key in _expire(EndpointKey.objects.all())})
    if workload_ids:
        reconcile_bump(Workload.objects.filter(pk__in=workload_ids))
    return workload_ids


# --- delivery, by the reconcile ---------------------------------------------------------------


@dataclass
class KeyDelivery:
    """An endpoint's keys as one reconcile sees them: `ctx` carries the active ones its policy
    names; `finish` deletes the revoked ones' Secrets and records what was delivered."""

    ctx: BuildContext
    created: tuple[int, ...] = ()  # keys whose Secret exists now (their sealed copy can go)
    revoked: tuple[int, ...] = ()  # revoked (or expired) keys whose Secret is still to delete
    expired: tuple[int, ...] = ()  # past their grace, their revocation not recorded yet

    def finish(self, gateway: FleetGateway) -> None:
        """After the policy that no longer names them: the revoked keys' Secrets."""
        for pk in self.revoked:
            gateway.delete(api_version=exposure.SECRET[0], kind=exposure.SECRET[1],
                           name=exposure.key_secret_name(self.ctx.name, pk),
                           namespace=self.ctx.namespace)
        if self.expired:
            with transaction.atomic():
                _expire(EndpointKey.objects.filter(pk__in=self.expired))
        now = timezone.now()
        if self.created:
            EndpointKey.objects.filter(pk__in=self.created, delivered_at__isnull=True).update(
                sealed="", delivered_at=now)
        if self.revoked:
            EndpointKey.objects.filter(pk__in=self.revoked).update(sealed="", removed_at=now)


def _opened(pk: int, sealed: str) -> str | None:
    try:
        return open_sealed(sealed)
    except InvalidToken:  # sealed with a key SEALING_KEYS no longer holds
        logger.warning("Endpoint key %s cannot be opened: it needs rotating", pk)
        return None


def keys_deliver(*, workload: Workload, ctx: BuildContext, gateway: FleetGateway) -> KeyDelivery:
    """Create the Secrets of the endpoint's keys not delivered yet (one that exists is kept), and
    say which keys its policy names: the active ones, but for a key that cannot be opened (a
    policy naming a missing Secret would refuse every key). A key past its grace is revoked
    here, whether or not the sweep has recorded it yet. Nothing for other kinds, nor while the
    endpoint is not published."""
    if workload.kind != inference.KIND.KEY:
        return KeyDelivery(ctx=ctx)
    now = timezone.now()
    rows = list(EndpointKey.objects.filter(workload=workload)
                .filter(Q(revoked_at__isnull=True) | Q(removed_at__isnull=True))
                .order_by("pk").values_list("pk", "sealed", "revoked_at", "expires_at"))
    expired = tuple(pk for pk, _, revoked_at, expires_at in rows
                    if revoked_at is None and expires_at is not None and expires_at <= now)
    revoked = (*(pk for pk, _, revoked_at, _ in rows if revoked_at is not None), *expired)
    if ctx.exposure is None:
        return KeyDelivery(ctx=ctx, revoked=revoked, expired=expired)
    names, created = [], []
    for pk, sealed, revoked_at, _ in rows:
        if revoked_at is not None or pk in expired:
            continue
        if sealed:
            raw = _opened(pk, sealed)
            if raw is None:
                continue
            gateway.create(manifest=exposure.key_secret(ctx, pk, raw))
            created.append(pk)
        names.append(exposure.key_secret_name(ctx.name, pk))
    ctx = replace(ctx, exposure=replace(ctx.exposure, credentials=tuple(names)))
    return KeyDelivery(ctx=ctx, created=tuple(created), revoked=revoked, expired=expired)


def teardown(workload: Workload, ctx: BuildContext) -> list[dict]:
    """The endpoint is being deleted: its keys' Secrets, to delete with its objects; no sealed
    key is kept for a Secret that will never be made."""
    if workload.kind != inference.KIND.KEY:
        return []
    keys = EndpointKey.objects.filter(workload=workload, removed_at__isnull=True)
    doomed = [{"apiVersion": exposure.SECRET[0], "kind": exposure.SECRET[1], "metadata": {
        "name": exposure.key_secret_name(ctx.name, pk), "namespace": ctx.namespace}}
        for pk in keys.values_list("pk", flat=True)]
    keys.update(sealed="", removed_at=timezone.now())
    return doomed
