"""Writes about model credentials, and their sync onto the cluster.

The secret values are sealed (core.sealed) before they reach the database and opened only by
the reconcile, which writes them into the tenant's namespace as a Secret (and a ServiceAccount
that lists it, for KServe). No value is ever returned, rendered, audited or logged: errors
from the cluster are scrubbed of them before they are kept or raised.

The reconcile is its own task, per tenant, rather than a step of the tenant's: the tenant's
keeps the objects it applied (for drift) and audits their differences, which for a Secret would
put its values in the database; and a credential that fails must not fail the tenant's quota.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.audit import audit
from core.fleet import FleetError, FleetGateway, TransientFleetError, get_gateway
from core.queueing import enqueue_on_commit
from core.reconcile import reconcile_bump, reconcile_failed, reconcile_succeeded
from core.sealed import InvalidToken, open_sealed, reseal, seal
from inventory.models import DEFAULT_CLUSTER

from ..access.models import Tenant
from ..enforcement.presence import clusters_wanted
from .manifests import (
    LABEL_CREDENTIAL,
    S3,
    S3_ACCESS_KEY_ID,
    S3_SECRET_ACCESS_KEY,
    SECRET,
    SECRET_KEYS,
    SELECTOR,
    SERVICE_ACCOUNT,
    CredentialSpec,
    credential_manifests,
    redacted,
)
from .models import ModelCredential
from .selectors import credential_users, may_manage_credentials

logger = logging.getLogger(__name__)

RECONCILE_CREDENTIALS = "tenants.credentials.tasks.credentials_reconcile_task"
REDACTED = "[redacted]"
MAX_VALUE = 4096
# The shortest value of each key: tokens and secret keys are long; an access key id may be short.
MIN_VALUE = {"HF_TOKEN": 8, S3_ACCESS_KEY_ID: 3, S3_SECRET_ACCESS_KEY: 8}
VALUE_FIELDS = {"HF_TOKEN": "token", S3_ACCESS_KEY_ID: "access_key_id",
                S3_SECRET_ACCESS_KEY: "secret_access_key"}


def _operated(actor: Any, tenant: Tenant) -> None:
    if not may_manage_credentials(actor, tenant):
        raise PermissionDenied("Only the tenant's owners and members manage its credentials.")


def _clean_values(kind: str, values: Mapping[str, str]) -> dict[str, str]:
    """The secret values a kind needs, stripped; field errors that never repeat a value."""
    errors: dict[str, list[str]] = {}
    clean = {}
    for key in SECRET_KEYS.get(kind, ()):
        field_name = VALUE_FIELDS[key]
        value = values.get(field_name)
        value = value.strip() if isinstance(value, str) else ""
        if not value:
            errors[field_name] = ["Required."]
        elif not (MIN_VALUE[key] <= len(value) <= MAX_VALUE):
            errors[field_name] = [f"Between {MIN_VALUE[key]} and {MAX_VALUE} characters."]
        elif not value.isascii() or not value.isprintable() or " " in value:
            errors[field_name] = ["Printable ASCII without spaces: paste the value as issued."]
        else:
            clean[key] = value
    if errors:
        raise ValidationError(errors)
    return clean


def _s3_settings(kind: str, s3_endpoint: str, s3_region: str, s3_use_https: bool) -> dict:
    if kind != S3:
        return {"s3_endpoint": "", "s3_region": "", "s3_use_https": True}
    endpoint = (s3_endpoint or "").strip().lower()
    for scheme, https in (("https://", True), ("http://", False)):
        if endpoint.startswith(scheme):  # a URL: its scheme says whether HTTPS
            endpoint, s3_use_https = endpoint[len(scheme):].rstrip("/"), https
    return {"s3_endpoint": endpoint, "s3_region": (s3_region or "").strip().lower(),
            "s3_use_https": bool(s3_use_https)}


def _shown(credential: ModelCredential) -> dict[str, Any]:
    """What the audit keeps of a credential: never its values."""
    shown = {"name": credential.name, "kind": credential.kind}
    if credential.kind == S3:
        shown |= {"s3_endpoint": credential.s3_endpoint, "s3_region": credential.s3_region,
                  "s3_use_https": credential.s3_use_https}
    return shown


def credentials_mark_changed(
    *, tenant: Tenant, credentials: Iterable[ModelCredential] = ()
) -> None:
    """The tenant's credentials changed (these were written): bump their desired versions and
    reconcile the tenant's credentials after commit. Call inside the writing transaction."""
    credentials = list(credentials)
    if credentials:
        ids = [c.pk for c in credentials]
        versions = reconcile_bump(ModelCredential.objects.filter(pk__in=ids))
        for credential in credentials:
            credential.desired_version = versions[credential.pk]
    enqueue_on_commit(RECONCILE_CREDENTIALS, tenant.pk)


@transaction.atomic
def credential_create(
    *, actor: Any, tenant: Tenant, name: str, kind: str, values: Mapping[str, str],
    s3_endpoint: str = "", s3_region: str = "", s3_use_https: bool = True,
) -> ModelCredential:
    """Keep a new credential for the tenant's endpoints (its values sealed) and put its Secret
    into the tenant's namespace."""
    _operated(actor, tenant)
    if kind not in ModelCredential.Kind.values:
        raise ValidationError({"kind": ["Pick a Hugging Face token or an S3 access key."]})
    clean = _clean_values(kind, values)
    credential = ModelCredential(
        tenant=tenant, name=(name or "").strip(), kind=kind, sealed_values=seal(json.dumps(clean)),
        created_by=actor, **_s3_settings(kind, s3_endpoint, s3_region, s3_use_https),
    )
    credential.full_clean(exclude=["tenant", "created_by", "replaced_by"])
    try:
        with transaction.atomic():
            credential.save()
    except IntegrityError:
        raise ValidationError(
            {"name": ["The tenant has a credential of this name: replace its values instead."]}
        ) from None
    audit(actor=actor, action="model_credential.create", obj=credential, tenant=tenant,
          changes=_shown(credential))
    credentials_mark_changed(tenant=tenant)
    return credential


@transaction.atomic
def credential_replace(
    *, actor: Any, credential: ModelCredential, values: Mapping[str, str],
    s3_endpoint: str = "", s3_region: str = "", s3_use_https: bool = True,
) -> ModelCredential:
    """New values (a rotated token, new keys) for a credential; its endpoints keep its name.
    Write-only: the old values are not shown, only replaced. Running endpoints read the new
    values when their pods next start."""
    tenant = credential.tenant
    _operated(actor, tenant)
    # The tenant's lock first, as a launch or a scale takes it before it checks its credential
    # is still there: one of the two sees the other's outcome, never neither.
    Tenant.objects.select_for_update().only("pk").get(pk=tenant.pk)
    locked = ModelCredential.objects.select_for_update().get(pk=credential.pk)
    clean = _clean_values(locked.kind, values)
    for name, value in _s3_settings(locked.kind, s3_endpoint, s3_region, s3_use_https).items():
        setattr(locked, name, value)
    locked.sealed_values = seal(json.dumps(clean))
    locked.replaced_by, locked.replaced_at = actor, timezone.now()
    locked.full_clean(exclude=["tenant", "created_by", "replaced_by"])
    locked.save()
    audit(actor=actor, action="model_credential.replace", obj=locked, tenant=tenant,
          changes={**_shown(locked), "values": "replaced"})
    credentials_mark_changed(tenant=tenant, credentials=[locked])
    return locked


@transaction.atomic
def credential_delete(*, actor: Any, credential: ModelCredential) -> None:
    """Forget a credential and remove its Secret; refused while an endpoint uses it."""
    tenant = credential.tenant
    _operated(actor, tenant)
    # The tenant's lock first, as a launch or a scale takes it before it checks its credential
    # is still there: one of the two sees the other's outcome, never neither.
    Tenant.objects.select_for_update().only("pk").get(pk=tenant.pk)
    locked = ModelCredential.objects.select_for_update().get(pk=credential.pk)
    users = credential_users(tenant=tenant, names=[locked.name])[locked.name]
    if users:
        names = ", ".join(name for _, name in users)
        raise ValidationError({"name": [
            f"Used by {names}: delete the endpoints or launch them with another credential "
            "first."]})
    audit(actor=actor, action="model_credential.delete", obj=locked, tenant=tenant,
          changes=_shown(locked))
    locked.delete()
    credentials_mark_changed(tenant=tenant)


@transaction.atomic
def credentials_reseal() -> int:
    """Seal every credential's values again with the first of SEALING_KEYS (key rotation: put
    the new key first, reseal, then drop the old one). Nothing on the cluster changes. Returns
    how many were resealed; one audit event says so."""
    count = 0
    for credential in ModelCredential.objects.select_for_update().only("id", "sealed_values"):
        credential.sealed_values = reseal(credential.sealed_values)
        credential.save(update_fields=["sealed_values"])
        count += 1
    audit(actor=None, action="model_credential.resealed", changes={"credentials": count})
    return count


# --- the sync onto the cluster ----------------------------------------------------------------


@dataclass
class CredentialsOutcome:
    tenant_id: int
    applied: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)


def scrub(message: str, values: Iterable[str]) -> str:
    """`message` without any of the secret `values` (longest first)."""
    for value in sorted(values, key=len, reverse=True):
        if value:
            message = message.replace(value, REDACTED)
    return message


def _spec(credential: ModelCredential, tenant: Tenant, values: Mapping[str, str]):
    return CredentialSpec(
        name=credential.name, kind=credential.kind, tenant_slug=tenant.slug,
        namespace=tenant.namespace, values=values, s3_endpoint=credential.s3_endpoint,
        s3_region=credential.s3_region, s3_use_https=credential.s3_use_https,
    )


def _prune(gateway: FleetGateway, tenant: Tenant, keep: set[str]) -> list[str]:
    """Delete the credentials' objects in the namespace that no credential names any more."""
    pruned = []
    for api_version, kind in (SECRET, SERVICE_ACCOUNT):
        for obj in gateway.list(api_version=api_version, kind=kind, namespace=tenant.namespace,
                                label_selector=SELECTOR):
            meta = obj.get("metadata") or {}
            if (meta.get("labels") or {}).get(LABEL_CREDENTIAL) in keep:
                continue
            gateway.delete(api_version=api_version, kind=kind, name=meta["name"],
                           namespace=tenant.namespace)
            pruned.append(f"{kind} {meta['name']}")
    return pruned


def credentials_reconcile(*, tenant_id: int, cluster: str = DEFAULT_CLUSTER,
                          gateway: FleetGateway | None = None) -> CredentialsOutcome:
    """Make the tenant's namespace on `cluster` hold one Secret (and ServiceAccount) per
    credential, and no other; record on each credential what happened (an error names the
    cluster). Idempotent: safe twice, late, concurrently. Nothing on a cluster the tenant is
    not on (its namespace is gone with everything in it). Raises a FleetError (scrubbed of
    every value) after recording, when anything failed: TransientFleetError if any failure is
    worth a retry."""
    outcome = CredentialsOutcome(tenant_id=tenant_id)
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None or cluster not in clusters_wanted([tenant_id]).get(tenant_id, set()):
        return outcome
    try:
        gateway = gateway or get_gateway(cluster)
    except FleetError as exc:
        for credential in ModelCredential.objects.filter(tenant=tenant).only("pk"):
            _record(credential.pk, error=_on(cluster, exc))
        raise
    errors: list[FleetError] = []
    errors: list[FleetError] = []
    credentials = list(ModelCredential.objects.filter(tenant=tenant).order_by("name"))
    every_value: list[str] = []
    for credential in credentials:
        version = credential.desired_version
        try:
            values = json.loads(open_sealed(credential.sealed_values))
        except (InvalidToken, ValueError):
            _record(credential.pk, error="The stored values cannot be opened with the portal's "
                    "sealing keys (SEALING_KEYS): replace them.")
            outcome.failed.append(credential.name)
            continue
        every_value += list(values.values())
        manifests = credential_manifests(_spec(credential, tenant, values))
        try:
            gateway.apply(manifests=manifests)
        except FleetError as exc:
            safe = _on(cluster, type(exc)(scrub(exc.message, values.values()), status=exc.status))
            _record(credential.pk, error=safe)
            errors.append(safe)
            outcome.failed.append(credential.name)
            continue
        _record(credential.pk, version=version, manifests=redacted(manifests))
        outcome.applied.append(credential.name)
    try:
        outcome.pruned = _prune(gateway, tenant, {c.name for c in credentials})
    except FleetError as exc:
        errors.append(_on(cluster, type(exc)(scrub(exc.message, every_value), status=exc.status)))
    if errors:
        transient = [e for e in errors if isinstance(e, TransientFleetError)]
        raise (transient or errors)[0]
    return outcome


def _on(cluster: str, error: FleetError) -> FleetError:
    """The error, naming the cluster where it happened."""
    return type(error)(f"On cluster {cluster}: {error.message}", status=error.status)


def credentials_reconcile_everywhere(*, tenant_ids: list[int]) -> list[tuple[int, str]]:
    """Queue one credentials reconcile per cluster each tenant is on, to that cluster's queue
    (after commit)."""
    targets = sorted((t, c) for t, clusters in clusters_wanted(tenant_ids).items()
                     for c in clusters)
    for tenant_id, cluster in targets:
        enqueue_on_commit(RECONCILE_CREDENTIALS, tenant_id, cluster, cluster=cluster)
    return targets


@transaction.atomic
def _record(credential_id: int, *, version: int = 0, manifests: list | None = None,
            error: FleetError | str | None = None) -> None:
    credential = ModelCredential.objects.select_for_update().filter(pk=credential_id).first()
    if credential is None:
        return  # deleted meanwhile: the next reconcile prunes its objects
    tenant = credential.tenant
    if error is not None:
        message, new = reconcile_failed(credential, error=error)
        if new:
            audit(actor=None, action="model_credential.apply_failed", obj=credential,
                  tenant=tenant, changes={"error": message,
                                          "transient": isinstance(error, TransientFleetError)})
        return
    if reconcile_succeeded(credential, version=version, manifests=manifests or []):
        audit(actor=None, action="model_credential.applied", obj=credential, tenant=tenant,
              changes={"version": version})


def credentials_reconcile_sweep() -> list[tuple[int, str]]:
    """Queue a reconcile of every tenant's credentials on each of its clusters: retries
    failures, applies what is behind, prunes the Secrets of deleted credentials, repairs
    drift."""
    ids = list(Tenant.objects.order_by("pk").values_list("pk", flat=True))
    return credentials_reconcile_everywhere(tenant_ids=ids)

