"""Why a queued workload waits, and who took its GPUs when it was preempted: read from Kueue.

A look (one workload's, or the observe sweep's over every live one) first finds the workloads
whose pods carry Kueue's admission gate. Only when there are any does it read Kueue, and then
a bounded number of times whatever their number: one list of Kueue's Workload objects (in the
one namespace they share, else across the cluster), and each LocalQueue their pods wait in (a
tenant's, or an endpoint's own) through Kueue's visibility API, page by page
(`FLEET_LIST_PAGE_SIZE` at a time, at most `MAX_PAGES`). What it finds becomes
`details["queue"]` of the workload's observation (its position, Kueue's message, the flavor it
waits for, what it would borrow, and all that in one line for people), and one timeline event
per preemption Kueue reports, naming the preemptor when it is a portal workload.

Kueue not answering never fails a look: without the visibility API (404, 403, 503) the page
still shows Kueue's own message and says the position is unknown; without Kueue's Workloads it
shows what the pods say.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.db import transaction

from core.fleet import FleetError, FleetGateway
from inventory import resource_classes

from ...enforcement.manifests import LOCAL_QUEUE, QUEUE_NAME_LABEL
from ...quota.models import Quota
from ..kinds import kueue
from ..kinds.base import (
    LABEL_MANAGED_BY,
    LABEL_WORKLOAD_ID,
    MANAGED_BY,
    Manifest,
    ObjectKey,
    Observation,
    queued_by_kueue,
)
from ..models import Workload, WorkloadEvent
from .notifications import workload_webhook

logger = logging.getLogger(__name__)

POD = ("v1", "Pod")
# Pages of one LocalQueue's pending workloads read at most (with the default page size, 50,000
# workloads): a workload further back is told its position is unknown.
MAX_PAGES = 50
PREEMPTED = "Preempted"


def _pods(objects: Mapping[ObjectKey, Manifest]) -> list[Manifest]:
    return [obj for (api_version, kind, _), obj in objects.items() if (api_version, kind) == POD]


def _local_queue(objects: Mapping[ObjectKey, Manifest]) -> str:
    for pod in _pods(objects):
        name = ((pod.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL)
        if name:
            return name
    return LOCAL_QUEUE


@dataclass
class KueueView:
    """What Kueue said during one look, for the workloads it found waiting in a queue."""

    waiting: set[int] = field(default_factory=set)
    # Kueue's Workload objects read (None: the kind could not be read).
    kueue_workloads: list[Manifest] | None = None
    # Per (namespace, LocalQueue): the visibility API's items (None: it did not answer).
    positions: dict[tuple[str, str], list[Manifest] | None] = field(default_factory=dict)
    # The uid of each object of the workloads looked at → the workload's id.
    owners: dict[str, int] = field(default_factory=dict)
    workloads: dict[int, Workload] = field(default_factory=dict)
    # (tenant id, resource class) → (granted, what Kueue counts in use).
    quotas: dict[tuple[int, str], tuple[int, int]] = field(default_factory=dict)
    # To find a preemptor among every workload's pods when the look saw only some of them.
    gateway: FleetGateway | None = None
    everyones_pods: bool = False


def _pending_positions(
    gateway: FleetGateway, namespace: str, local_queue: str
) -> list[Manifest] | None:
    """Every pending workload of one LocalQueue, page by page until a short page."""
    size = max(1, int(settings.FLEET_LIST_PAGE_SIZE))
    items: list[Manifest] = []
    for page in range(MAX_PAGES):
        try:
            got = gateway.pending_workloads(namespace=namespace, local_queue=local_queue,
                                            limit=size, offset=page * size)
        except FleetError as exc:
            logger.info("Kueue's visibility API did not answer for %s/%s: %s",
                        namespace, local_queue, exc)
            return None
        items += got
        if len(got) < size:
            break
    return items


def kueue_view(gateway: FleetGateway, workloads: list[Workload],
               owned: Mapping[int, Mapping[ObjectKey, Manifest]]) -> KueueView:
    """Read Kueue for those of `workloads` whose pods wait for its admission (none: no call)."""
    view = KueueView(
        waiting={w.pk for w in workloads
                 if any(queued_by_kueue(pod) for pod in _pods(owned.get(w.pk, {})))},
        owners={uid: w.pk for w in workloads for uid in kueue.object_uids(owned.get(w.pk, {}))},
        workloads={w.pk: w for w in workloads},
        gateway=gateway,
    )
    if not view.waiting:
        return view
    waiting = [w for w in workloads if w.pk in view.waiting]
    namespaces = {w.tenant.namespace for w in waiting}
    try:
        view.kueue_workloads = gateway.list(
            api_version=kueue.KUEUE_WORKLOAD[0], kind=kueue.KUEUE_WORKLOAD[1],
            namespace=next(iter(namespaces)) if len(namespaces) == 1 else None,
        )
    except FleetError as exc:
        logger.warning("Could not read Kueue's Workloads: %s", exc)
    for queue in sorted({(w.tenant.namespace, _local_queue(owned.get(w.pk, {})))
                         for w in waiting}):
        view.positions[queue] = _pending_positions(gateway, *queue)
    rows = Quota.objects.filter(tenant_id__in={w.tenant_id for w in waiting}).values_list(
        "tenant_id", "resource", "limit", "in_use")
    view.quotas = {}
    for tenant_id, resource, limit, in_use in rows:  # every cluster's grant and anywhere's
        before = view.quotas.get((tenant_id, resource), (0, 0))
        view.quotas[(tenant_id, resource)] = (before[0] + limit, before[1] + in_use)
    return view


def _theirs(view: KueueView, objects: Mapping[ObjectKey, Manifest]) -> list[Manifest]:
    uids = kueue.object_uids(objects)
    return [wl for wl in view.kueue_workloads or [] if kueue.owner_uids(wl) & uids]


def _gpu_class(demand: Mapping[str, Any]) -> str | None:
    """The workload's GPU class; `hami:<model>` for HAMi shares (its demand names the model's
    memory and compute)."""
    found = next((key for key in demand if key.startswith(("gpu:", "mig:"))), None)
    if found is None:
        hami = next((key for key in demand if key.startswith("hami:")), None)
        found = resource_classes.hami_gpu(hami.split(":")[1]) if hami else None
    return found


def with_queue(view: KueueView, workload: Workload, objects: Mapping[ObjectKey, Manifest],
               observation: Observation) -> Observation:
    """The observation, with `details["queue"]` when the workload waits in its queue."""
    if workload.pk not in view.waiting:
        return observation
    pending = [wl for wl in _theirs(view, objects) if kueue.is_pending(wl)]
    names = {(wl.get("metadata") or {}).get("name") for wl in pending}
    uids = kueue.object_uids(objects)
    items = view.positions.get((workload.tenant.namespace, _local_queue(objects)))
    positions = None if items is None else [
        item for item in items
        if (item.get("metadata") or {}).get("name") in names or kueue.owner_uids(item) & uids
    ]
    resource_class = _gpu_class(workload.demand or {})
    nominal, in_use = view.quotas.get((workload.tenant_id, resource_class or ""), (0, 0))
    details = kueue.queue_details(
        pending=pending, positions=positions, resource_class=resource_class,
        nominal=nominal, in_use=in_use, in_cohort=workload.tenant.borrows_from_cohort,
    )
    return replace(observation, details={**observation.details, "queue": details})


def _learn_everyones_pods(view: KueueView) -> None:
    """A look at one workload knows its own pods only: the preemptor's are read once, in one
    list of the pods the portal's workloads own across the cluster."""
    if view.everyones_pods or view.gateway is None:
        return
    view.everyones_pods = True
    try:
        pods = view.gateway.list(api_version=POD[0], kind=POD[1],
                                 label_selector=f"{LABEL_MANAGED_BY}={MANAGED_BY}")
    except FleetError as exc:
        logger.info("Could not read the portal's pods to name a preemptor: %s", exc)
        return
    for pod in pods:
        meta = pod.get("metadata") or {}
        workload_id = str((meta.get("labels") or {}).get(LABEL_WORKLOAD_ID) or "")
        if meta.get("uid") and workload_id.isdigit():
            view.owners.setdefault(str(meta["uid"]), int(workload_id))


def _preemptor_id(view: KueueView, found: kueue.Preemption) -> int | None:
    workload_id = view.owners.get(found.preemptor_job_uid)
    if workload_id is None and found.preemptor_uid:
        for wl in view.kueue_workloads or []:
            if (wl.get("metadata") or {}).get("uid") == found.preemptor_uid:
                workload_id = next((view.owners[uid] for uid in kueue.owner_uids(wl)
                                    if uid in view.owners), None)
    return workload_id


def _preemptor(view: KueueView, found: kueue.Preemption) -> Workload | None:
    """The portal workload whose Kueue Workload preempted, if it is one of ours."""
    workload_id = _preemptor_id(view, found)
    if workload_id is None:
        _learn_everyones_pods(view)
        workload_id = _preemptor_id(view, found)
    if workload_id is None:
        return None
    return view.workloads.get(workload_id) or (
        Workload.objects.select_related("tenant").filter(pk=workload_id).first())


def _preempted_words(view: KueueView, found: kueue.Preemption) -> str:
    """Who reclaimed the capacity: a portal workload by name where it is one, else Kueue."""
    preemptor = _preemptor(view, found)
    if preemptor is not None:
        owner = preemptor.tenant.name
        why = f"{owner}'s own quota, lent until then" if found.reason in kueue.RECLAIMS \
            else found.why
        who = f"tenant {owner}'s {preemptor.kind_label.lower()} {preemptor.name}"
        words = f"Its GPUs were reclaimed by {who}{f' ({why})' if why else ''}."
    elif found.reason in kueue.RECLAIMS:
        words = f"Its GPUs were reclaimed by their owner in the cohort. Kueue: {found.message}"
    else:
        words = f"Kueue preempted it: {found.message}"
    return f"{words} ({found.key})"


def _unrecorded(workload_id: int, keys: Iterable[str]) -> list[str]:
    """The evictions (by key) not yet on the workload's timeline."""
    recorded = list(WorkloadEvent.objects.filter(workload_id=workload_id, reason=PREEMPTED)
                    .values_list("message", flat=True))
    return [key for key in keys if not any(key in message for message in recorded)]


def preemptions_record(view: KueueView, workload: Workload,
                       objects: Mapping[ObjectKey, Manifest]) -> int:
    """One timeline event per preemption Kueue reports of the workload's pods, once each
    (level-triggered: an eviction seen again is already on the timeline). Returns how many
    were new."""
    found = [p for wl in _theirs(view, objects) if (p := kueue.preemption(wl)) is not None]
    if not found:
        return 0
    unique = {p.key: p for p in found}
    # Named before the lock (naming may read the cluster), and only what is not recorded yet.
    words = {key: _preempted_words(view, unique[key])
             for key in _unrecorded(workload.pk, unique)}
    if not words:
        return 0
    with transaction.atomic():
        # Under the workload's lock: a sweep and the workload's own look seeing the same
        # eviction at once record it once.
        locked = Workload.objects.select_for_update().filter(pk=workload.pk).first()
        if locked is None:
            return 0
        new = _unrecorded(workload.pk, words)
        for key in new:
            WorkloadEvent.objects.create(workload=locked, kind=WorkloadEvent.Kind.TRANSITION,
                                         reason=PREEMPTED, message=words[key],
                                         demand=locked.demand)
            workload_webhook(workload=locked, event_type="workload.preempted", reason=PREEMPTED,
                             message=words[key])
    return len(new)

