"""The cluster side of workloads, level-triggered: the database says what should be there.

`workload_reconcile` brings one workload's objects to its spec — server-side apply of what the
kind builds, generated key Secrets created once, objects it no longer wants pruned — or, while
it is deleting, removes them and finishes the deletion only once every owned object is
confirmed gone. `workload_observe` reads its objects back (by the owner labels) and moves the
lifecycle as the cluster reports it. Both are safe to run twice, late or after a crash.

`workloads_observe_sweep` (beat, every few seconds) observes every live workload with one list
per owned kind across the cluster (Secrets: one per tenant namespace, docs/rbac.md), writes
the workloads whose state changed and records its own time once (`ObserveSweep`);
`workloads_reconcile_sweep` (beat) re-queues every workload whose desired state is not yet
applied, and every deletion still in progress; first it ends the grace of rotated endpoint
keys whose time is up, which makes their endpoints due. Kueue's side of a queued workload: `queue`.

Objects that carry an ownerReference belong to their owner (the VMI KubeVirt makes from a VM,
the pods an operator runs): they are observed, never pruned or deleted directly. Objects a kind
builds without the workload-id label outlive the workload (a notebook's home volume): applied,
never pruned or deleted.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import asdict
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.audit import audit
from core.errors import InvalidTransition
from core.fleet import FleetError, FleetGateway, PermanentFleetError, get_gateway
from core.queueing import enqueue_on_commit, send_task
from core.reconcile import reconcile_bump, reconcile_failed, reconcile_succeeded
from inventory.models import DEFAULT_CLUSTER, Cluster

from ...access.changes import tenant_mark_changed
from ...enforcement.services import tenant_reconcile
from ..kinds import slurm, vm
from ..kinds.base import (
    LABEL_WORKLOAD_ID,
    BuildContext,
    Manifest,
    ObjectKey,
    Observation,
    SpecError,
)
from ..kinds.schemas import check_manifests
from ..models import TRANSITIONS, ObserveSweep, Workload, WorkloadEvent, WorkloadStatus
from ..selectors import build_context, endpoint_queue_of
from . import endpoint_keys, notifications, queue
from .cluster_reads import object_key, owned_objects, unowned_in_bulk, unowned_objects

logger = logging.getLogger(__name__)

RECONCILE = "tenants.workloads.tasks.workload_reconcile_task"
OBSERVE_SWEEP = "tenants.workloads.tasks.workloads_observe_sweep_task"
S = WorkloadStatus
STATE_TO_STATUS = {
    "progressing": S.PROVISIONING,
    "ready": S.READY,
    "degraded": S.DEGRADED,
    "failed": S.FAILED,
}
MAX_CONDITIONS = 12


def _owned_by_another(obj: Manifest) -> bool:
    return bool((obj.get("metadata") or {}).get("ownerReferences"))


def _outlives_it(manifest: Manifest) -> bool:
    """An object a kind applies without the workload-id label (a notebook's home volume,
    shared by its person's notebooks): applied with the workload, never pruned or deleted."""
    return LABEL_WORKLOAD_ID not in ((manifest.get("metadata") or {}).get("labels") or {})


def _event(workload: Workload, kind: str, **fields: Any) -> None:
    WorkloadEvent.objects.create(workload=workload, kind=kind, demand=workload.demand, **fields)


# --- apply ------------------------------------------------------------------------------------


def _create_generated_secrets(workload: Workload, ctx: BuildContext, gateway: FleetGateway) -> None:
    """A Slurm cluster's keys: generated here, created once (never overwritten, never shown)."""
    if workload.kind != slurm.KEY:
        return
    db_password = secrets.token_urlsafe(24) if workload.spec.get("accounting") else None
    for manifest in slurm.secret_manifests(
        ctx, secrets.token_bytes(slurm.KEY_BYTES), secrets.token_bytes(slurm.KEY_BYTES),
        db_password=db_password,
    ):
        gateway.create(manifest=manifest)  # False: it exists, and keeps its keys


def _prune(previous: list[Manifest], wanted: list[Manifest], gateway: FleetGateway) -> None:
    keep = {object_key(m) for m in wanted}
    for manifest in reversed(previous):
        if object_key(manifest) not in keep and not _outlives_it(manifest):
            meta = manifest["metadata"]
            gateway.delete(api_version=manifest["apiVersion"], kind=manifest["kind"],
                           name=meta["name"], namespace=meta.get("namespace"))


def _apply(workload: Workload, ctx: BuildContext,
           gateway: FleetGateway) -> dict[ObjectKey, Manifest]:
    """Apply the desired objects; record the outcome. Returns the objects as stored."""
    version = workload.desired_version
    try:
        keys = endpoint_keys.keys_deliver(workload=workload, ctx=ctx, gateway=gateway)
        manifests = workload.kind_entry.module.manifests(workload.spec, keys.ctx)
        check_manifests(manifests)
        _create_generated_secrets(workload, ctx, gateway)
        stored = gateway.apply(manifests=manifests)
        _prune(workload.applied_manifests or [], manifests, gateway)
        keys.finish(gateway)  # the revoked keys' Secrets, now that the policy names them no more
    except FleetError as exc:
        _record_apply_failure(workload.pk, exc)
        raise
    with transaction.atomic():
        locked = Workload.objects.select_for_update().get(pk=workload.pk)
        if reconcile_succeeded(locked, version=version, manifests=manifests):
            _event(locked, WorkloadEvent.Kind.APPLIED, reason="Applied",
                   message=f"{len(manifests)} objects applied (version {version}).")
        if locked.status in (S.PENDING, S.FAILED):
            _move(locked, S.PROVISIONING, reason="Applied",
                  message="Objects applied; waiting for the cluster to bring them up.")
    workload.refresh_from_db()
    return {object_key(obj): obj for obj in stored if obj.get("metadata", {}).get("name")}


def _record_apply_failure(workload_id: int, error: FleetError) -> None:
    with transaction.atomic():
        workload = Workload.objects.select_for_update().filter(pk=workload_id).first()
        if workload is None:
            return
        message, new = reconcile_failed(workload, error=error)
        if new:
            _event(workload, WorkloadEvent.Kind.ERROR, reason=type(error).__name__,
                   message=message)
        if isinstance(error, PermanentFleetError) and workload.status != S.FAILED:
            # The API refused the objects: retrying will not help; the cluster's message says why.
            _move(workload, S.FAILED, reason="Rejected", message=message)


# --- observe ----------------------------------------------------------------------------------

# Beyond this many workloads a list asks for every object the portal manages and sorts them
# by their workload-id label here: a selector naming each id would grow with the fleet (past
# the request-line limits of API servers and proxies, 8 KiB for some, at about 1,000 ids).
def _move(workload: Workload, target: str, *, reason: str, message: str) -> bool:
    """Move the (locked) workload's lifecycle, with its event; False when the move is not one
    the lifecycle allows from where it is (or another worker made it first)."""
    source = workload.status
    if target == source or target not in TRANSITIONS[source]:
        return False
    changes: dict[str, Any] = {"status_reason": reason[:200], "status_message": message}
    first_ready = target == S.READY and workload.ready_at is None
    if first_ready:
        changes["ready_at"] = timezone.now()
    if target == S.DELETED:
        changes["deleted_at"] = timezone.now()
        if endpoint_queue_of(workload):  # its queues go once its replicas are gone
            tenant_mark_changed(tenants=[workload.tenant], peers=False)
    try:
        workload.move_to(target, **changes)
    except InvalidTransition:
        return False
    _event(workload, WorkloadEvent.Kind.TRANSITION, from_status=source, to_status=target,
           reason=reason[:200], message=message)
    if target in (S.READY, S.FAILED, S.DELETED):
        audit(actor=None, action=f"workload.{target}", obj=workload, tenant=workload.tenant,
              changes={"from": source, "reason": reason, "message": message[:500]})
    if first_ready or target == S.FAILED:
        notifications.workload_notify(workload=workload, event=target)
        notifications.workload_webhook(workload=workload, event_type=f"workload.{target}",
                                       reason=reason, message=message)
    return True


def _unchanged(workload: Workload, observed: dict[str, Any], observation: Observation) -> bool:
    """Whether recording `observation` would write what the workload (as loaded) already says:
    the same observation, no move, the same reason. A workload whose objects are absent is
    never unchanged: each look applies them again."""
    target = STATE_TO_STATUS.get(observation.state)
    return (
        observation.state != "absent"
        and workload.observed == json.loads(json.dumps(observed, cls=DjangoJSONEncoder))
        and (target is None or (
            target == workload.status
            # As stored: a move or a new reason writes `reason or state`.
            and ((observation.reason or observation.state)[:200], observation.message)
            == (workload.status_reason, workload.status_message)
        ))
    )


def _record_observation(workload: Workload, ctx: BuildContext, objects: dict,
                        observation: Observation, unchanged: list[int] | None = None) -> None:
    """Record the observation under the workload's lock, moving its lifecycle. When it says
    what the workload already does, nothing is locked, and nothing is written but when it was
    looked at alone; a sweep adds it to `unchanged` instead (the sweep's own row says when)."""
    connection = None
    if observation.state in ("ready", "degraded"):
        connection = asdict(workload.kind_entry.module.connection(objects, workload.spec, ctx))
    observed = {
        "state": observation.state,
        "reason": observation.reason,
        "message": observation.message,
        "conditions": list(observation.conditions)[:MAX_CONDITIONS],
        "details": observation.details,
        "connection": connection,
    }
    if _unchanged(workload, observed, observation):
        if unchanged is None:
            _touch([workload.pk])
        else:
            unchanged.append(workload.pk)
        return
    with transaction.atomic():
        locked = Workload.objects.select_for_update().select_related("tenant").get(
            pk=workload.pk
        )
        if locked.status in (S.DELETING, S.DELETED):
            return  # a deletion started meanwhile: its teardown decides from here
        locked.observed = observed
        locked.observation_recorded_at = timezone.now()
        fields = ["observed", "observation_recorded_at"]
        target = STATE_TO_STATUS.get(observation.state)
        if target is not None and target != locked.status:
            locked.save(update_fields=fields)
            _move(locked, target, reason=observation.reason or observation.state,
                  message=observation.message)
            return
        if target is not None and (observation.reason, observation.message) != (
            locked.status_reason, locked.status_message
        ):
            locked.status_reason = (observation.reason or observation.state)[:200]
            locked.status_message = observation.message
            fields += ["status_reason", "status_message"]
        locked.save(update_fields=fields)
        if observation.state == "absent" and locked.applied_version:
            # Its objects vanished from the cluster (deleted by hand): apply them again.
            reconcile_bump(Workload.objects.filter(pk=locked.pk))
            _event(locked, WorkloadEvent.Kind.ERROR, reason="Missing",
                   message="Its objects are gone from the cluster: applying them again.")
            enqueue_on_commit(RECONCILE, locked.pk, cluster=locked.cluster_id)


def _touch(workload_ids: list[int]) -> None:
    """Looked at now, nothing else changed (a deletion, meanwhile, is its teardown's)."""
    if workload_ids:
        Workload.objects.filter(pk__in=workload_ids).exclude(
            status__in=(S.DELETING, S.DELETED)).update(observation_recorded_at=timezone.now())


def _observe(workload: Workload, ctx: BuildContext, gateway: FleetGateway,
             owned: dict[ObjectKey, Manifest],
             unowned: dict[ObjectKey, Manifest] | None = None,
             unchanged: list[int] | None = None,
             kueue: queue.KueueView | None = None) -> Observation:
    """Judge the workload from its objects and Kueue's (`kueue`: the sweep's, else read here)
    and record it; `unowned` read here when not given, `unchanged` as in `_record_observation`."""
    objects = {**owned, **(unowned_objects(workload, ctx, gateway) if unowned is None else unowned)}
    kueue = kueue or queue.kueue_view(gateway, [workload], {workload.pk: objects})
    observation = queue.with_queue(kueue, workload, objects,
                                   workload.kind_entry.module.observe(objects, workload.spec, ctx))
    if workload.kind == vm.KEY and vm.needs_restart(objects, workload.spec, ctx):
        # KubeVirt keeps a running VMI on its old template: delete it, the VM boots a new one.
        gateway.delete(api_version=vm.API_VERSION, kind="VirtualMachineInstance",
                       name=ctx.name, namespace=ctx.namespace)
        observation = Observation("progressing", "Restarting", "The VM is restarting.",
                                  details=observation.details)
    # A preemption first: on the timeline it comes before the wait it caused.
    queue.preemptions_record(kueue, workload, objects)
    _record_observation(workload, ctx, objects, observation, unchanged)
    return observation


def workload_observe(*, workload_id: int, gateway: FleetGateway | None = None) -> str | None:
    """Read one workload's objects back and move its lifecycle as the cluster reports it."""
    workload = Workload.objects.select_related("tenant").filter(pk=workload_id).first()
    if workload is None or not workload.is_live:
        return None
    gateway = gateway or get_gateway(workload.cluster_id)
    ctx = build_context(workload=workload)
    owned = owned_objects(gateway, [workload]).get(workload.pk, {})
    return _observe(workload, ctx, gateway, owned).state


# --- delete -----------------------------------------------------------------------------------


def _teardown(workload: Workload, gateway: FleetGateway) -> str:
    """Remove the workload's objects; deleted only once none of them is left."""
    ctx = build_context(workload=workload)
    applied = [m for m in workload.applied_manifests if not _outlives_it(m)]
    for manifest in reversed([*applied, *endpoint_keys.teardown(workload, ctx)]):
        meta = manifest["metadata"]
        gateway.delete(api_version=manifest["apiVersion"], kind=manifest["kind"],
                       name=meta["name"], namespace=meta.get("namespace"))
    left = {**owned_objects(gateway, [workload]).get(workload.pk, {}),
            **unowned_objects(workload, ctx, gateway)}
    for (api_version, kind, name), obj in left.items():
        if not _owned_by_another(obj):  # pruned by label; owned ones go with their owner
            gateway.delete(api_version=api_version, kind=kind, name=name,
                           namespace=ctx.namespace)
    with transaction.atomic():
        locked = Workload.objects.select_for_update().select_related("tenant").get(
            pk=workload.pk
        )
        if left:
            names = ", ".join(f"{kind} {name}" for (_, kind, name) in sorted(left)[:4])
            more = f" and {len(left) - 4} more" if len(left) > 4 else ""
            locked.status_message = f"Waiting for {names}{more} to be gone."
            locked.save(update_fields=["status_message"])
            return "deleting"
        _move(locked, S.DELETED, reason="Deleted",
              message="Every object is gone from the cluster; its quota is released.")
    return "deleted"


# --- the task's entry -------------------------------------------------------------------------


def _refuse_to_build(workload: Workload, error: SpecError) -> str:
    """The kind will not build a stored spec for the tenant as it is now (a partition for a
    tenant made dedicated since the launch): nothing is applied, the workload fails and says
    why. Its quota stays held until someone deletes it."""
    message = " ".join(m for messages in error.fields.values() for m in messages)[:2000]
    with transaction.atomic():
        locked = Workload.objects.select_for_update().get(pk=workload.pk)
        moved = _move(locked, S.FAILED, reason="Refused", message=message)
        if not moved and locked.status_message != message:
            Workload.objects.filter(pk=locked.pk).update(status_message=message)
    return "failed"


def _queues_first(workload: Workload, gateway: FleetGateway) -> None:
    """An endpoint with a queue of its own: its tenant's queues as the database says (a no-op
    when in sync), before its InferenceService names the queue, or Kueue would hold its pods
    until the queue exists. The tenant's reconcile records its own failure and is retried by
    its task and sweep: the endpoint goes on."""
    if endpoint_queue_of(workload) is None:
        return
    try:
        tenant_reconcile(tenant_id=workload.tenant_id, cluster=workload.cluster_id, force=False,
                         gateway=gateway)
    except FleetError:
        logger.warning("Queues of %s not applied yet", workload, exc_info=True)


def workload_reconcile(*, workload_id: int, gateway: FleetGateway | None = None) -> str:
    """Make the cluster hold what the database says for one workload, then look at it.

    Raises the gateway's FleetError after recording it (TransientFleetError: worth a retry).
    """
    workload = Workload.objects.select_related("tenant").filter(pk=workload_id).first()
    if workload is None or workload.status == S.DELETED:
        return "gone"
    gateway = gateway or get_gateway(workload.cluster_id)
    if workload.status == S.DELETING:
        return _teardown(workload, gateway)
    ctx = build_context(workload=workload)
    if workload.applied_version < workload.desired_version or workload.reconcile_error:
        first = workload.applied_version == 0
        _queues_first(workload, gateway)
        try:
            stored = _apply(workload, ctx, gateway)
        except SpecError as exc:
            return _refuse_to_build(workload, exc)
        if first:
            # Its first apply: what the cluster makes from these objects (a VM's instance, a
            # chart's Secret) cannot be there before them, and server-side apply answered each
            # object as stored, status included. Judged from those answers: no list, no get
            # (the sweeps look at everything, with the rest, from the next one on).
            return _observe(workload, ctx, gateway, stored, unowned={}).state
    owned = owned_objects(gateway, [workload]).get(workload.pk, {})
    return _observe(workload, ctx, gateway, owned).state


def _record_sweep(*, cluster: str, started, observed: int, changed: int) -> None:
    """The cluster's sweep row, moved on only forwards (two sweeps that overlap finish in any
    order)."""
    values = {"started_at": started, "finished_at": timezone.now(), "observed": observed,
              "changed": changed}
    sweeps = ObserveSweep.objects.filter(cluster_id=cluster)
    if not sweeps.filter(started_at__lt=started).update(**values):
        ObserveSweep.objects.get_or_create(cluster_id=cluster, defaults=values)


def workloads_observe_sweeps() -> int:
    """Queue an observe sweep of each cluster in service (each in its own task and queue: a
    cluster that does not answer holds up no other); how many were queued."""
    clusters = list(Cluster.objects.in_service().values_list("slug", flat=True))
    for cluster in clusters:
        send_task(OBSERVE_SWEEP, cluster, cluster=cluster)
    return len(clusters)


def workloads_observe_sweep(
    *, cluster: str = DEFAULT_CLUSTER, gateway: FleetGateway | None = None
) -> int:
    """Observe every live workload on `cluster`: one list per owned kind across the cluster,
    then each workload's objects from those lists. Returns how many were observed."""
    gateway = gateway or get_gateway(cluster)
    started = timezone.now()
    live = list(
        Workload.objects.select_related("tenant")
        .filter(cluster_id=cluster)
        .exclude(status__in=(S.DELETING, S.DELETED))
        .filter(applied_version__gt=0)
        .order_by("pk")
    )
    owned = owned_objects(gateway, live)
    unowned = unowned_in_bulk(gateway, live)
    kueue = queue.kueue_view(gateway, live, owned)  # only when some wait in a queue
    unchanged: list[int] = []
    missed = False
    for workload in live:
        try:
            _observe(workload, build_context(workload=workload), gateway,
                     owned.get(workload.pk, {}), unowned.get(workload.pk, {}), unchanged, kueue)
        except FleetError:
            missed = True
            logger.warning("Could not observe %s", workload, exc_info=True)
    if missed:
        # Not every live workload was seen: the sweep's row would claim the missed ones too.
        _touch(unchanged)
    else:
        _record_sweep(cluster=cluster, started=started, observed=len(live),
                      changed=len(live) - len(unchanged))
    # Deletions still waiting for their objects to go: their teardown looks again.
    deleting = Workload.objects.filter(cluster_id=cluster, status=S.DELETING)
    for workload_id in deleting.values_list("pk", flat=True):
        enqueue_on_commit(RECONCILE, workload_id, cluster=cluster)
    return len(live)


def workloads_reconcile_now(*, actor: Any | None, workload_ids: list[int]) -> int:
    """A platform admin asks for these workloads to be applied and looked at now (audited)."""
    workloads = list(Workload.objects.filter(pk__in=workload_ids).exclude(status=S.DELETED)
                     .select_related("tenant"))
    for workload in workloads:
        audit(actor=actor, action="workload.reconcile_now", obj=workload, tenant=workload.tenant)
        enqueue_on_commit(RECONCILE, workload.pk, cluster=workload.cluster_id)
    return len(workloads)


def workloads_reconcile_sweep(*, cluster: str | None = None) -> list[int]:
    """Queue a reconcile of every workload whose desired state is not applied yet, whose last
    apply failed, or whose deletion is still in progress (lost tasks, retries given up), each
    on its cluster's queue; only `cluster`'s when named (its recovery, once it answers again).

    Expired endpoint keys are recorded first: a key's grace ends with nothing else changing,
    and this sweep's period (two minutes) is the "within minutes" a key outlives its grace on
    the gateway, without a beat entry of its own."""
    endpoint_keys.endpoint_keys_expire()
    due = Workload.objects.exclude(status=S.DELETED).filter(
        Q(applied_version__lt=F("desired_version"))
        | ~Q(reconcile_error="")
        | Q(status__in=(S.DELETING, S.PENDING))
    )
    if cluster is not None:
        due = due.filter(cluster_id=cluster)
    rows = list(due.order_by("pk").values_list("pk", "cluster_id"))
    for workload_id, on in rows:
        enqueue_on_commit(RECONCILE, workload_id, cluster=on)
    return [workload_id for workload_id, _ in rows]
