"""What people ask of their workloads: launch, scale, power (VMs and notebooks), delete, the
vCluster's kubeconfig. Each in one transaction with an audit event; the cluster follows after
commit.

Nothing reaches the cluster here: a bad spec, a taken name or a quota the launch would break is a
field error before any object exists, and the reconcile task does the cluster's part.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from core.audit import audit
from core.errors import RuleViolation, Unavailable
from core.fleet import FleetError, get_gateway
from core.queueing import enqueue_on_commit
from core.reconcile import reconcile_bump
from core.validators import validate_cost_label, validate_dns1123_label
from inventory.models import DEFAULT_CLUSTER

from ...access.changes import tenant_mark_changed
from ...access.models import Tenant
from ...access.rules import tenants_operated_by
from ...credentials.models import ModelCredential
from ..kinds import notebook, vcluster, vm
from ..kinds.base import SpecError
from ..kinds.schemas import InvalidManifest, check_manifests
from ..models import Workload, WorkloadEvent, WorkloadStatus
from ..placement import placement_check
from ..registry import KINDS
from ..selectors import build_context, endpoint_queue_of, launch_context
from .admission import admission_check, tenant_lock

RECONCILE = "tenants.workloads.tasks.workload_reconcile_task"
OBSERVE = "tenants.workloads.tasks.workload_observe_task"
# The detail page asks for a fresh look at most this often (eager mode: the demo's only watch).
REFRESH_EVERY = timedelta(seconds=3)


def _spec_errors(exc: SpecError) -> ValidationError:
    return ValidationError({f"spec.{name}" if name != "__all__" else "spec": messages
                            for name, messages in exc.fields.items()})


def _operated(actor, tenant: Tenant, what: str) -> None:
    if not tenants_operated_by(actor).filter(pk=tenant.pk).exists():
        raise PermissionDenied(f"Only the tenant's owners and members {what}.")


def workload_check_name(*, tenant: Tenant, name: str) -> str:
    """The name, stripped, if it is a DNS-1123 label no live workload of the tenant has;
    else ValidationError({"name": …}). The launch form's and the API's check use it too."""
    return _check_name(tenant, name)


def _check_name(tenant: Tenant, name: str) -> str:
    name = (name or "").strip()
    try:
        validate_dns1123_label(name)
    except ValidationError as exc:
        raise ValidationError({"name": exc.messages}) from None
    if Workload.objects.filter(tenant=tenant, name=name).exclude(
        status=WorkloadStatus.DELETED
    ).exists():
        raise ValidationError({"name": [f"“{name}” is taken in {tenant.name}: pick another name."]})
    return name


def _check_buildable(workload: Workload) -> None:
    """Build the objects before anything is stored or sent: an invalid one is the portal's bug,
    refused here with a message instead of failing on the cluster later."""
    try:
        check_manifests(workload.kind_entry.module.manifests(workload.spec, build_context(
            workload=workload)))
    except InvalidManifest as exc:
        raise RuleViolation(
            f"The portal could not build valid {workload.kind_label} objects for this spec; "
            f"the platform team has been told. ({str(exc)[:300]})"
        ) from exc


def _event(workload: Workload, kind: str, *, actor=None, **fields: Any) -> WorkloadEvent:
    return WorkloadEvent.objects.create(
        workload=workload, kind=kind, actor=actor if getattr(actor, "pk", None) else None,
        demand=workload.demand, **fields,
    )


def workload_validate(
    *, tenant: Tenant, kind: str, spec: Mapping[str, Any], person: str = ""
) -> tuple:
    """The clean spec and its demand, or ValidationError with field errors (`spec.<field>`,
    `kind`). `person` is who launches (their username: a notebook mounts their home volume).
    No write, no lock: the launch form's live check and preview use it too."""
    entry = KINDS.get(kind)
    if entry is None:
        raise ValidationError({"kind": [f"Pick one of: {', '.join(KINDS)}."]})
    try:
        clean = entry.module.validate(spec, launch_context(tenant=tenant, person=person))
    except SpecError as exc:
        raise _spec_errors(exc) from None
    return clean, entry.module.demand(clean)


@transaction.atomic
def workload_launch(
    *, tenant: Tenant, actor, kind: str, name: str, spec: Mapping[str, Any],
    cluster: str | None = None, label: str = "",
) -> Workload:
    """An owner or member launches a workload; it is admitted against the tenant's quota and
    placed (on `cluster` if it is one of the options, else on the portal's choice: see
    `placement`) under the tenant's lock, and provisioned there after commit. `label` (a
    project, an experiment) groups its cost."""
    _operated(actor, tenant, "launch workloads")
    if tenant.status != Tenant.Status.ACTIVE:
        raise ValidationError({"tenant": ["The tenant is suspended: nothing new is launched."]})
    errors: dict[str, list[str]] = {}
    clean = demand = None
    try:
        name = _check_name(tenant, name)
    except ValidationError as exc:
        errors |= exc.message_dict
    label = (label or "").strip()
    try:
        validate_cost_label(label)
    except ValidationError as exc:
        errors["label"] = exc.messages
    try:
        clean, demand = workload_validate(tenant=tenant, kind=kind, spec=spec,
                                          person=actor.get_username())
    except ValidationError as exc:
        errors |= exc.message_dict
    if errors:
        raise ValidationError(errors)
    tenant = tenant_lock(tenant_id=tenant.pk)
    _check_credential(tenant, clean)
    if kind == NOTEBOOK:
        holder = _home_holder(tenant=tenant, spec=clean)
        if holder is not None:
            raise ValidationError({"spec": [_home_taken(holder)]})
    home = _home_cluster(tenant=tenant, spec=clean) if kind == NOTEBOOK and not cluster else None
    try:
        placed = placement_check(tenant=tenant, demand=demand, cluster=cluster or home)
    except ValidationError as exc:
        # Quota short everywhere it could go: said per class, as on one cluster.
        admission_check(tenant=tenant, demand=demand, cluster=cluster or home or DEFAULT_CLUSTER)
        if home is None:
            raise
        raise ValidationError({"cluster": [f"Your home volume is on cluster “{home}”: "
                                           f"{exc.message_dict['cluster'][0]}"]}) from None
    cluster = placed
    admission_check(tenant=tenant, demand=demand, cluster=cluster)
    workload = Workload(
        tenant=tenant, kind=kind, name=name, launched_by=actor, spec=clean, demand=demand,
        cluster_id=cluster, label=label,
    )
    try:
        with transaction.atomic():
            workload.save()
    except IntegrityError:  # launched under the same name a moment ago
        raise ValidationError({"name": [f"“{name}” is taken in {tenant.name}."]}) from None
    _check_buildable(workload)
    _queues_follow(workload, before=None)
    _event(workload, WorkloadEvent.Kind.LAUNCHED, actor=actor, to_status=WorkloadStatus.PENDING)
    audit(actor=actor, action="workload.launch", obj=workload, tenant=tenant,
          changes={"kind": kind, "name": name, "spec": clean, "demand": demand,
                   "cluster": cluster, "label": label})
    enqueue_on_commit(RECONCILE, workload.pk, cluster=cluster)
    return workload


def _check_credential(tenant: Tenant, spec: Mapping[str, Any]) -> None:
    """The model credential `spec` names is still the tenant's, read under the tenant's lock
    (validation read it before): deleting one takes the same lock and refuses while a workload
    uses it, so a launch never keeps a credential deleted in between."""
    name = spec.get("credential")
    if name and not ModelCredential.objects.filter(tenant=tenant, name=name).exists():
        raise ValidationError({"spec.credential": [
            f"No model credential “{name}” in {tenant.name} any more: it was just deleted."]})


def _locked_live(workload_id: int, *, actor, what: str, policy: bool = False) -> Workload:
    """The live workload, locked after its tenant; `actor` must operate the tenant, unless the
    tenant's own policy acts (`policy`: the idle policy, with no person behind it)."""
    workload = Workload.objects.select_related("tenant").get(pk=workload_id)
    if not policy:
        _operated(actor, workload.tenant, what)  # who may act first: a viewer learns no more
    tenant_lock(tenant_id=workload.tenant_id)  # tenant first, then workload: one lock order
    workload = Workload.objects.select_for_update().select_related("tenant").get(pk=workload_id)
    if not workload.is_live:
        raise RuleViolation(f"{workload} is {workload.get_status_display().lower()}: it no "
                            "longer changes.")
    return workload


def _queues_follow(workload: Workload, *, before: Mapping[str, Any] | None) -> None:
    """An endpoint's queue of its own is its tenant's (tenants.enforcement): when launching or
    rescaling it changes that queue, the tenant's reconcile applies it (the endpoint's own
    reconcile applies it first too, before its InferenceService names it)."""
    was = endpoint_queue_of(workload, before) if before is not None else None
    if endpoint_queue_of(workload) != was:
        tenant_mark_changed(tenants=[workload.tenant], peers=False)


def _respec(workload: Workload, *, actor, spec: dict, event: str, action: str,
            message: str) -> Workload:
    """Store a changed spec (already validated) after admission; reconcile after commit."""
    _check_credential(workload.tenant, spec)
    demand = workload.kind_entry.module.demand(spec)
    admission_check(tenant=workload.tenant, demand=demand, cluster=workload.cluster_id,
                    excluding=workload.pk)
    before = workload.spec
    workload.spec, workload.demand = spec, demand
    workload.save(update_fields=["spec", "demand"])
    _check_buildable(workload)
    _queues_follow(workload, before=before)
    reconcile_bump(Workload.objects.filter(pk=workload.pk))
    workload.refresh_from_db(fields=["desired_version"])
    _event(workload, event, actor=actor, message=message)
    audit(actor=actor, action=action, obj=workload, tenant=workload.tenant,
          changes={"before": before, "after": spec, "demand": demand})
    enqueue_on_commit(RECONCILE, workload.pk, cluster=workload.cluster_id)
    return workload


@transaction.atomic
def workload_scale(*, workload_id: int, actor, changes: Mapping[str, Any]) -> Workload:
    """Change a running workload's size (replicas, workers, vCPUs…); a scale-up is admitted
    against the quota under the tenant's lock, like a launch."""
    workload = _locked_live(workload_id, actor=actor, what="scale workloads")
    try:
        spec = workload.kind_entry.module.scale(
            workload.spec, changes, launch_context(tenant=workload.tenant)
        )
    except SpecError as exc:
        raise _spec_errors(exc) from None
    if spec == workload.spec:
        raise ValidationError({"spec": ["Nothing changed: the workload already has this size."]})
    changed = ", ".join(f"{k} {workload.spec.get(k)} → {v}" for k, v in spec.items()
                        if workload.spec.get(k) != v and not k.startswith("_"))
    return _respec(workload, actor=actor, spec=spec, event=WorkloadEvent.Kind.SCALED,
                   action="workload.scale", message=changed)


@transaction.atomic
def workload_resize_by_policy(*, workload_id: int, changes: Mapping[str, Any],
                              message: str) -> Workload:
    """The tenant's idle policy gives GPUs back: a smaller size, or a stopped VM or notebook
    (`changes` {"power": "stop"}). Nobody acts (the audit event's actor is empty); the message
    says why."""
    workload = _locked_live(workload_id, actor=None, what="", policy=True)
    if "power" in changes:
        if workload.kind not in POWERED:
            raise RuleViolation(f"{workload} has no power actions: only VMs and notebooks do.")
        spec, event, action = (POWERED[workload.kind][0](workload.spec, changes["power"]),
                               WorkloadEvent.Kind.POWER, f"workload.{changes['power']}")
    else:
        try:
            spec = workload.kind_entry.module.scale(
                workload.spec, changes, launch_context(tenant=workload.tenant))
        except SpecError as exc:
            raise _spec_errors(exc) from None
        event, action = WorkloadEvent.Kind.SCALED, "workload.scale"
    return _respec(workload, actor=None, spec=spec, event=event, action=action, message=message)


POWER_ACTIONS = ("start", "stop", "restart")
NOTEBOOK = notebook.KIND.KEY
# The kinds people start and stop: each one's spec change and the actions it has (a notebook
# has no restart: stop and start it).
POWERED: dict[str, tuple[Callable[..., dict], tuple[str, ...]]] = {
    vm.KEY: (vm.power, POWER_ACTIONS),
    NOTEBOOK: (notebook.power, ("start", "stop")),
}
# Home volumes only one node (or one pod) may mount: one running notebook per person.
SINGLE_MOUNT = frozenset({"ReadWriteOnce", "ReadWriteOncePod"})


def power_actions(kind: str) -> tuple[str, ...]:
    """What a workload of `kind` may be asked to do with its power (none: not powered)."""
    return POWERED[kind][1] if kind in POWERED else ()


def _home_holder(*, tenant: Tenant, spec: Mapping[str, Any],
                 excluding: int | None = None) -> Workload | None:
    """The tenant's running notebook that mounts the same home volume as `spec`, when home
    volumes are mounted by one node at a time (NOTEBOOK_HOME_ACCESS_MODE): a second pod would
    wait for the volume forever. None when it is free or shared (ReadWriteMany)."""
    if settings.NOTEBOOK_HOME_ACCESS_MODE not in SINGLE_MOUNT or not spec.get("home"):
        return None
    holders = Workload.objects.filter(
        tenant=tenant, kind=NOTEBOOK, spec__home=spec["home"], spec__running=True,
    ).exclude(status__in=(WorkloadStatus.DELETING, WorkloadStatus.DELETED))
    if excluding is not None:
        holders = holders.exclude(pk=excluding)
    return holders.order_by("created_at", "pk").first()


def _home_cluster(*, tenant: Tenant, spec: Mapping[str, Any]) -> str | None:
    """The cluster the home volume of `spec` is on (the last notebook that mounted it, deleted
    or not: the volume outlives it), for a notebook placed by the portal; None for a new one."""
    if not spec.get("home"):
        return None
    return (Workload.objects.filter(tenant=tenant, kind=NOTEBOOK, spec__home=spec["home"])
            .order_by("-created_at", "-pk").values_list("cluster_id", flat=True).first())


def _home_taken(holder: Workload) -> str:
    return (f"Your home volume is mounted by notebook {holder.name}: stop it first, or ask "
            "your admins for ReadWriteMany home volumes.")


@transaction.atomic
def workload_power(*, workload_id: int, actor, action: str) -> Workload:
    """Start, stop or restart a virtual machine, or start or stop a notebook. Stopping keeps
    its disk (a notebook's home volume) and gives its GPUs back to the tenant's quota;
    starting takes them again (admitted like a launch)."""
    if action not in POWER_ACTIONS:
        raise ValidationError({"action": [f"Pick one of: {', '.join(POWER_ACTIONS)}."]})
    workload = _locked_live(workload_id, actor=actor, what="start and stop workloads")
    if workload.kind not in POWERED:
        raise RuleViolation(f"{workload} has no power actions: only VMs and notebooks do.")
    power, actions = POWERED[workload.kind]
    if action not in actions:
        raise RuleViolation(f"A {workload.kind_label} has no {action}: use "
                            f"{' or '.join(actions)}.")
    running = bool(workload.spec.get("running", True))
    if (action == "start" and running) or (action in ("stop", "restart") and not running):
        raise RuleViolation(f"{workload} is already {'running' if running else 'stopped'}.")
    if action == "start" and workload.kind == NOTEBOOK:
        holder = _home_holder(tenant=workload.tenant, spec=workload.spec, excluding=workload.pk)
        if holder is not None:
            raise RuleViolation(_home_taken(holder))
    spec = power(workload.spec, action)
    return _respec(workload, actor=actor, spec=spec, event=WorkloadEvent.Kind.POWER,
                   action=f"workload.{action}", message=action)


@transaction.atomic
def workload_delete(*, workload_id: int, actor) -> Workload:
    """Delete a workload: its objects are removed from the cluster, and it is deleted (its
    quota released) once every one of them is confirmed gone."""
    workload = Workload.objects.select_related("tenant").get(pk=workload_id)
    _operated(actor, workload.tenant, "delete workloads")
    workload = (Workload.objects.select_for_update().select_related("tenant")
                .with_observed_at().get(pk=workload_id))
    source = workload.status
    # The sweeps stop covering it: when they last saw it is kept on its row.
    workload.move_to(WorkloadStatus.DELETING, status_reason="DeleteRequested",
                     status_message="Removing its objects from the cluster.",
                     observation_recorded_at=workload.observed_at)
    _event(workload, WorkloadEvent.Kind.DELETE_REQUESTED, actor=actor, from_status=source,
           to_status=WorkloadStatus.DELETING)
    audit(actor=actor, action="workload.delete", obj=workload, tenant=workload.tenant,
          changes={"from": source})
    enqueue_on_commit(RECONCILE, workload.pk, cluster=workload.cluster_id)
    return workload


def workload_refresh(*, workload: Workload) -> bool:
    """Ask for a fresh look at a workload still in progress (the detail page while it polls);
    at most every few seconds. True when one was queued. A deletion's look is its teardown,
    which finishes it once nothing is left (an observation ignores a deleting workload)."""
    if not workload.in_progress:
        return False
    recent = timezone.now() - REFRESH_EVERY
    queued = (
        Workload.objects.filter(pk=workload.pk).with_observed_at()
        .filter(Q(observed_at__isnull=True) | Q(observed_at__lte=recent))
        .update(observation_recorded_at=timezone.now())
    )
    if queued:
        # A deletion is finished by its teardown (which checks nothing is left), not a look.
        task = RECONCILE if workload.status == WorkloadStatus.DELETING else OBSERVE
        enqueue_on_commit(task, workload.pk, cluster=workload.cluster_id)
    return bool(queued)


def workload_kubeconfig(*, workload: Workload, actor) -> str:
    """The kubeconfig of a ready vCluster, read from its Secret now (never stored by the
    portal); every download is audited."""
    _operated(actor, workload.tenant, "download kubeconfigs")
    if workload.kind != vcluster.KIND.KEY:
        raise RuleViolation(f"{workload} has no kubeconfig: only vClusters do.")
    if workload.status not in (WorkloadStatus.READY, WorkloadStatus.DEGRADED):
        raise RuleViolation(f"{workload} is not ready yet: its kubeconfig does not exist.")
    release = vcluster.release_name(workload.name)
    try:
        secret = get_gateway(workload.cluster_id).get(
            api_version="v1", kind="Secret", name=vcluster.kubeconfig_secret_name(release),
            namespace=workload.tenant.namespace,
        )
    except FleetError as exc:
        raise Unavailable(f"The cluster did not answer ({exc}); try again in a moment.") from exc
    if secret is None:
        raise RuleViolation(f"{workload}'s kubeconfig is not on the cluster (yet).")
    try:
        kubeconfig = vcluster.kubeconfig_from_secret(secret)
    except ValueError as exc:
        raise RuleViolation(f"{workload}'s kubeconfig Secret is unreadable: {exc}") from exc
    audit(actor=actor, action="workload.kubeconfig_download", obj=workload,
          tenant=workload.tenant)
    return kubeconfig
