"""API keys of inference endpoints: create (the key is shown once), revoke, rotate; and their
delivery to the gateway by the endpoint's reconcile.

A key is a random token; the portal keeps its SHA-256 digest and its first characters. The
gateway needs the key itself, in a Secret: until the reconcile has created that Secret the key
stays sealed on its row (`core.sealed`), so a cluster that refuses or does not answer leaves the
key recorded and retried; once the Secret exists the sealed copy is cleared. Revoking drops the
key from the endpoint's SecurityPolicy and deletes its Secret. Every change bumps the endpoint's
desired version: the reconcile applies the policy that names exactly the active keys.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass, replace

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from core.audit import audit
from core.errors import RuleViolation
from core.fleet import FleetGateway
from core.queueing import enqueue_on_commit
from core.reconcile import reconcile_bump
from core.sealed import InvalidToken, open_sealed, seal

from ..endpoint_keys import EndpointKey
from ..kinds import inference
from ..kinds.base import BuildContext
from ..kinds.inference import exposure
from ..models import Workload
from .lifecycle import RECONCILE, _locked_live

logger = logging.getLogger(__name__)

DUPLICATE_NAME = "The endpoint already has an active key with this name."


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
    enqueue_on_commit(RECONCILE, workload.pk)


def _issue(workload: Workload, *, actor, name: str) -> IssuedKey:
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": ["Give the key a name, e.g. 'chat-app' or 'ci'."]})
    if workload.endpoint_keys.filter(name=name, revoked_at__isnull=True).exists():
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
        raise RuleViolation(f"The key “{key.name}” is already revoked.")
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
def endpoint_key_rotate(*, workload_id: int, key_id: int, actor) -> IssuedKey:
    """Replace a key by a new one of the same name (shown once); the old one is revoked."""
    workload = _endpoint(workload_id, actor, "manage endpoint keys")
    old = _active_key(workload, key_id)
    _revoke(old, actor)
    issued = _issue(workload, actor=actor, name=old.name)
    audit(actor=actor, action="endpoint_key.rotate", obj=issued.key, tenant=workload.tenant,
          changes={"workload": workload.name, "name": old.name, "revoked": old.hint,
                   "hint": issued.key.hint})
    _changed(workload)
    return issued


# --- delivery, by the reconcile ---------------------------------------------------------------


@dataclass
class KeyDelivery:
    """An endpoint's keys as one reconcile sees them: `ctx` carries the active ones its policy
    names; `finish` deletes the revoked ones' Secrets and records what was delivered."""

    ctx: BuildContext
    created: tuple[int, ...] = ()  # keys whose Secret exists now (their sealed copy can go)
    revoked: tuple[int, ...] = ()  # revoked keys whose Secret is still to delete

    def finish(self, gateway: FleetGateway) -> None:
        """After the policy that no longer names them: the revoked keys' Secrets."""
        for pk in self.revoked:
            gateway.delete(api_version=exposure.SECRET[0], kind=exposure.SECRET[1],
                           name=exposure.key_secret_name(self.ctx.name, pk),
                           namespace=self.ctx.namespace)
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
    policy naming a missing Secret would refuse every key). Nothing for other kinds, nor while
    the endpoint is not published."""
    if workload.kind != inference.KIND.KEY:
        return KeyDelivery(ctx=ctx)
    rows = list(EndpointKey.objects.filter(workload=workload)
                .filter(Q(revoked_at__isnull=True) | Q(removed_at__isnull=True))
                .order_by("pk").values_list("pk", "sealed", "revoked_at"))
    revoked = tuple(pk for pk, _, revoked_at in rows if revoked_at is not None)
    if ctx.exposure is None:
        return KeyDelivery(ctx=ctx, revoked=revoked)
    names, created = [], []
    for pk, sealed, revoked_at in rows:
        if revoked_at is not None:
            continue
        if sealed:
            raw = _opened(pk, sealed)
            if raw is None:
                continue
            gateway.create(manifest=exposure.key_secret(ctx, pk, raw))
            created.append(pk)
        names.append(exposure.key_secret_name(ctx.name, pk))
    ctx = replace(ctx, exposure=replace(ctx.exposure, credentials=tuple(names)))
    return KeyDelivery(ctx=ctx, created=tuple(created), revoked=revoked)


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
