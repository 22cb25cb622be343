"""Idle GPUs given back: each live workload's GPUs measured from DCGM, and its tenant's policy.

`workloads_idle_sweep` (beat, every few minutes) reads every GPU pod's utilization from
Prometheus (`gpu_activity`: three queries per window in use, and the last hour's mean, which it
writes on each workload for the lists). A workload is idle when every sample of its GPUs in its
tenant's window stayed below the threshold, and nobody resized, started or stopped it within
that window. Then, level-triggered, by the tenant's `IdlePolicy` (fleet defaults for what it
leaves empty):

- off: the episode is recorded and shown (the workload's page, the dashboard), nothing more;
- warn: its owners (who launched it, the tenant's owners) get a mail and an in-portal notice
  with the idle GPU-hours and their cost;
- act: after the grace period, its GPUs are given back: an inference endpoint scaled to its
  minimum, a VM or a notebook stopped (its disk or home volume kept), a Slurm cluster's idle
  workers removed. A vCluster is only warned about (which of its pods to stop is its people's
  call).

A workload marked "keep running" (with a reason, audited) is never warned about nor acted on.
Every action is audited and undone from the workload's page in one click (`idle_undo`). An
episode ends when its GPUs are busy again (or, once acted on, when it is undone or resized).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from core.audit import audit
from core.errors import RuleViolation
from core.prometheus import PrometheusClient, PrometheusError
from inventory import resource_classes

from ...access.models import Tenant
from ...access.rules import tenant_owner_emails, tenants_managed_by, tenants_operated_by
from ...quota.pricing import quoted_price
from .. import gpu_activity
from ..gpu_metrics import prometheus_client
from ..kinds import inference, slurm, vm
from ..models import (
    OPEN_EPISODE_STATES,
    IdleEpisode,
    IdleMode,
    IdlePolicy,
    Workload,
    WorkloadEvent,
    WorkloadStatus,
)
from ..selectors import build_context
from .lifecycle import POWERED, workload_power, workload_resize_by_policy, workload_scale
from .notifications import launcher_email, workload_mail, workload_webhook

logger = logging.getLogger(__name__)

HOUR = 3600
S, E = WorkloadStatus, IdleEpisode.State
# What a person or the policy did to its size: an idle window starts after the last of these.
RESIZES = (WorkloadEvent.Kind.LAUNCHED, WorkloadEvent.Kind.SCALED, WorkloadEvent.Kind.POWER)


@dataclass(frozen=True)
class Rules:
    """A tenant's policy with the fleet's defaults filled in."""

    mode: str
    threshold_percent: int
    window_minutes: int
    grace_minutes: int
    # Notebooks: stopped after this many hours without use (0: never; notebook_culling).
    notebook_idle_hours: int = 0

    @property
    def window(self) -> timedelta:
        return timedelta(minutes=self.window_minutes)


def rules_for(policy: IdlePolicy | None) -> Rules:
    def pick(name: str, default: Any) -> Any:
        value = getattr(policy, name, None) if policy is not None else None
        return default if value is None else value

    return Rules(
        mode=policy.mode if policy is not None else settings.IDLE_GPU_MODE,
        threshold_percent=pick("threshold_percent", settings.IDLE_GPU_THRESHOLD_PERCENT),
        window_minutes=pick("window_minutes", settings.IDLE_GPU_WINDOW_MINUTES),
        grace_minutes=pick("grace_minutes", settings.IDLE_GPU_GRACE_MINUTES),
        notebook_idle_hours=pick("notebook_idle_hours", settings.NOTEBOOK_IDLE_HOURS),
    )


def tenant_rules(tenant: Tenant) -> Rules:
    return rules_for(IdlePolicy.objects.filter(tenant=tenant).first())


def gpu_classes(demand: dict[str, int]) -> dict[str, int]:
    """The GPU classes (whole GPUs, MIG instances, HAMi shares) of a demand, with units."""
    held = {}
    for resource, units in (demand or {}).items():
        try:
            kind = resource_classes.parse(resource).kind
        except resource_classes.UnknownResourceClass:
            continue
        if kind in ("gpu", "mig", "hami") and int(units) > 0:
            held[resource] = int(units)
    return held


# --- what giving the GPUs back means for each kind ----------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What the policy would do: the change, its undo, what it gives back, in words."""

    changes: dict[str, Any]
    restore: dict[str, Any]
    given_back: dict[str, int]  # GPU class → units the workload no longer holds
    words: str

    @property
    def reclaimed(self) -> int:
        """GPUs (or MIG instances) given back; for HAMi shares, the replicas' shares."""
        whole = sum(units for resource, units in self.given_back.items()
                    if not resource.startswith("hami:"))
        return whole or int(self.restore.get("max_replicas", 0)) - int(
            self.changes.get("max_replicas", 0))


def _plan(workload: Workload, changes: dict[str, Any], restore: dict[str, Any],
          words: str) -> Plan:
    spec = POWERED[workload.kind][0](workload.spec, "stop") if "power" in changes else {
        **workload.spec, **changes}
    after = gpu_classes(workload.kind_entry.module.demand(spec))
    before = gpu_classes(workload.demand)
    given_back = {r: units - after.get(r, 0) for r, units in before.items()
                  if units > after.get(r, 0)}
    return Plan(changes, restore, given_back, words)


def plan_for(workload: Workload, idle_pods: int) -> Plan | None:
    """How to give back `workload`'s idle GPUs, or None when there is nothing to give back."""
    spec = workload.spec or {}
    if workload.kind == inference.KIND.KEY:
        floor = max(int(spec.get("min_replicas") or 1), 1)  # Standard mode keeps one replica
        current = int(spec.get("max_replicas") or 1)
        if current <= floor:
            return None
        return _plan(workload, {"max_replicas": floor}, {"max_replicas": current},
                     f"scaled to its minimum: at most {floor} replica{'s' * (floor != 1)}"
                     f" (was {current})")
    if workload.kind in POWERED:
        if not spec.get("running", True):
            return None
        kept = "its disk" if workload.kind == vm.KEY else "its home volume"
        return _plan(workload, {"power": "stop"}, {"power": "start"}, f"stopped ({kept} is kept)")
    if workload.kind == slurm.KEY:
        workers = int(spec.get("workers") or 0)
        left = max(workers - idle_pods, 0)
        if left >= workers:
            return None
        return _plan(workload, {"workers": left}, {"workers": workers},
                     f"{workers - left} idle worker{'s' * (workers - left != 1)} removed"
                     f" ({workers} → {left})")
    return None  # a vCluster: which of its pods to stop is its people's call


# --- the sweep ----------------------------------------------------------------------------------


@dataclass
class SweepResult:
    measured: int = 0
    idle: int = 0
    warned: int = 0
    acted: int = 0
    ended: int = 0
    error: str = ""


def _candidates() -> list[Workload]:
    live = (Workload.objects.filter(status__in=(S.READY, S.DEGRADED, S.PROVISIONING))
            .select_related("tenant", "tenant__idle_policy", "launched_by").order_by("pk"))
    return [w for w in live if gpu_classes(w.demand)]


def last_resized_at(workload_ids: list[int]) -> dict[int, datetime]:
    """When each was last launched, resized, started or stopped (none: no such event)."""
    rows = (WorkloadEvent.objects.filter(workload_id__in=workload_ids, kind__in=RESIZES)
            .values("workload_id").annotate(last=Max("created_at")))
    return {row["workload_id"]: row["last"] for row in rows}


def workloads_idle_sweep(*, client: PrometheusClient | None = None,
                         now: datetime | None = None) -> SweepResult:
    """Measure every live GPU workload and apply its tenant's idle policy (see the module)."""
    result = SweepResult()
    client = client or prometheus_client()
    if client is None:
        result.error = "PROMETHEUS_URL is not set: GPUs are not measured."
        return result
    now = now or timezone.now()
    workloads = _candidates()
    rules = {w.tenant_id: rules_for(getattr(w.tenant, "idle_policy", None)) for w in workloads}
    windows = {r.window_minutes * 60 for r in rules.values()} | {HOUR}
    try:
        pods = {seconds: gpu_activity.read_pods(client, window_seconds=seconds, at=now)
                for seconds in sorted(windows)}
    except PrometheusError as exc:
        logger.warning("idle sweep: Prometheus did not answer: %s", exc)
        result.error = f"Prometheus did not answer: {exc}"
        return result
    # Today's price of one unit of each GPU class held: one quote for the whole sweep.
    quote = quoted_price((r, 1) for r in {r for w in workloads for r in gpu_classes(w.demand)})
    unit_prices = dict(quote.unit_prices) if quote is not None else {}
    resized = last_resized_at([w.pk for w in workloads])
    episodes = {e.workload_id: e for e in IdleEpisode.objects.filter(
        workload__in=workloads, state__in=OPEN_EPISODE_STATES)}
    hour_means = []
    for workload in workloads:
        pattern = workload.kind_entry.module.gpu_pods(workload.spec,
                                                      build_context(workload=workload))
        namespace = workload.tenant.namespace
        last_hour = gpu_activity.activity_of(pods[HOUR], namespace=namespace, pattern=pattern)
        workload.gpu_utilization, workload.gpu_measured_at = last_hour.mean, now
        hour_means.append(workload)
        tenant_rules_ = rules[workload.tenant_id]
        activity = gpu_activity.activity_of(pods[tenant_rules_.window_minutes * 60],
                                            namespace=namespace, pattern=pattern)
        result.measured += activity.measured
        last_resized = resized.get(workload.pk) or workload.created_at
        settled = workload.status == S.READY and last_resized <= now - tenant_rules_.window
        _judge(workload, episodes.get(workload.pk), activity, tenant_rules_,
               Judged(settled=settled, last_resized=last_resized, now=now,
                      unit_prices=unit_prices), result)
    Workload.objects.bulk_update(hour_means, ["gpu_utilization", "gpu_measured_at"])
    result.ended += _end_without_gpus(workloads, now)
    return result


def _end_without_gpus(measured: list[Workload], now: datetime) -> int:
    """End the episodes of workloads that hold no GPUs now (stopped, failed, deleted): idle
    ones are over; one the policy acted on stays until it is undone, unless its workload is
    being deleted."""
    gone = (IdleEpisode.objects.filter(state__in=OPEN_EPISODE_STATES)
            .exclude(workload__in=[w.pk for w in measured])
            .filter(Q(state__in=(E.IDLE, E.WARNED))
                    | Q(workload__status__in=(S.DELETING, S.DELETED))))
    return gone.update(state=E.OVER, ended_at=now)


def _idle_count(workload: Workload, episode: IdleEpisode) -> int:
    """How many of its GPU pods the episode found idle (a Slurm cluster's idle workers)."""
    if workload.kind != slurm.KEY:
        return 0
    per_worker = int((workload.spec or {}).get("gpus_per_worker") or 1)
    return episode.gpus // max(per_worker, 1)


def _idle_pods(workload: Workload, activity: gpu_activity.Activity, rules: Rules) -> int:
    """How many of its GPU pods are idle, when that makes it idle: all of them, or for a Slurm
    cluster any worker (its idle workers can go while the others compute)."""
    idle = len(activity.idle_pods(rules.threshold_percent))
    if workload.kind == slurm.KEY:
        return idle
    return idle if activity.idle(rules.threshold_percent) else 0


@dataclass(frozen=True)
class Judged:
    settled: bool  # ready, and not resized within the window
    last_resized: datetime
    now: datetime
    unit_prices: dict[str, Decimal]  # GPU class → one unit's price per hour today


def _idle_per_hour(workload: Workload, idle_gpus: int, measured_gpus: int,
                   unit_prices: dict[str, Decimal]) -> Decimal | None:
    """What its idle GPUs cost per hour: its GPUs' price, pro rata (None: not priced)."""
    priced = [unit_prices[r] * units for r, units in gpu_classes(workload.demand).items()
              if r in unit_prices]
    if not priced or not measured_gpus:
        return None
    return (sum(priced) * idle_gpus / measured_gpus).quantize(Decimal("0.000001"))


def _judge(workload: Workload, episode: IdleEpisode | None, activity: gpu_activity.Activity,
           rules: Rules, judged: Judged, result: SweepResult) -> None:
    now = judged.now
    idle_pods = _idle_pods(workload, activity, rules) if judged.settled else 0
    if episode is not None and episode.state == E.ACTED:
        # Given back: it stays so until undone, or until its people resize it.
        if episode.acted_at and judged.last_resized > episode.acted_at:
            _end(episode, now, E.OVER)
            result.ended += 1
        return
    if not idle_pods:
        if episode is not None:
            _end(episode, now, E.OVER)
            result.ended += 1
        return
    result.idle += 1
    idle = activity.idle_pods(rules.threshold_percent)
    gpus = sum(pod.gpus for pod in idle)
    mean = gpu_activity.Activity(idle).mean or Decimal(0)
    per_hour = _idle_per_hour(workload, gpus, activity.gpus, judged.unit_prices)
    with transaction.atomic():
        if episode is None:
            held = gpu_classes(workload.demand)
            try:
                with transaction.atomic():
                    episode = IdleEpisode.objects.create(
                        workload=workload, started_at=now - rules.window, seen_at=now,
                        resource=max(held, key=held.get), gpus=gpus, utilization=mean,
                        idle_per_hour=per_hour,
                    )
            except IntegrityError:
                return  # a sweep running at the same time opened it: that one goes on
        else:
            # Locked, and read again: a sweep running at the same time may have moved it on
            # (warned, acted), and must not warn or act twice.
            episode = IdleEpisode.objects.select_for_update().get(pk=episode.pk)
            if episode.state not in (E.IDLE, E.WARNED):
                return
            episode.seen_at, episode.gpus, episode.utilization = now, gpus, mean
            episode.idle_per_hour = per_hour
            episode.save(update_fields=["seen_at", "gpus", "utilization", "idle_per_hour"])
        if workload.keep_running_reason or rules.mode == IdleMode.OFF:
            return
        if episode.state == E.IDLE:
            _warn(workload, episode, rules, now)
            result.warned += 1
            return
        if rules.mode == IdleMode.ACT and episode.act_after is None:
            episode.act_after = now + timedelta(minutes=rules.grace_minutes)
            episode.save(update_fields=["act_after"])
        if (rules.mode == IdleMode.ACT and episode.act_after <= now
                and _act(workload, episode, idle_pods, now)):
            result.acted += 1


def _end(episode: IdleEpisode, now: datetime, state: str, actor=None) -> None:
    episode.state, episode.ended_at, episode.ended_by = state, now, actor
    episode.save(update_fields=["state", "ended_at", "ended_by"])


def _recipients(workload: Workload) -> list[str]:
    people = tenant_owner_emails([workload.tenant.slug]).get(workload.tenant.slug, [])
    return people + launcher_email(workload)


def _warn(workload: Workload, episode: IdleEpisode, rules: Rules, now: datetime) -> None:
    act = rules.mode == IdleMode.ACT
    episode.state, episode.warned_at = E.WARNED, now
    episode.act_after = now + timedelta(minutes=rules.grace_minutes) if act else None
    episode.save(update_fields=["state", "warned_at", "act_after"])
    plan = plan_for(workload, _idle_count(workload, episode))
    cost = episode.cost
    words = (f"{episode.gpus} idle GPU{'s' * (episode.gpus != 1)} at {episode.utilization}%"
             f" utilization: {episode.gpu_hours} GPU-hours since"
             f" {timezone.localtime(episode.started_at):%Y-%m-%d %H:%M}"
             + (f", {cost} {settings.BILLING_CURRENCY}" if cost is not None else ""))
    then = (f"Unless someone uses it or marks it “keep running”, it will be {plan.words} at "
            f"{timezone.localtime(episode.act_after):%Y-%m-%d %H:%M}."
            if act and plan else "Nothing will be done about it: the tenant's policy warns only."
            if not act else "There is nothing the policy can give back: it is at its minimum.")
    WorkloadEvent.objects.create(workload=workload, kind=WorkloadEvent.Kind.IDLE,
                                 reason="IdleWarning", message=f"{words}. {then}",
                                 demand=workload.demand)
    audit(actor=None, action="workload.idle_warned", obj=workload, tenant=workload.tenant,
          changes={"gpus": episode.gpus, "resource": episode.resource,
                   "utilization": str(episode.utilization), "act_after":
                   episode.act_after.isoformat() if episode.act_after else None})
    workload_mail(
        workload=workload, to=_recipients(workload),
        subject=f"{workload.kind_label} {workload.name} of {workload.tenant.name} has idle GPUs",
        lines=["Hello,", "",
               f"{workload.kind_label} {workload.name} of {workload.tenant.name} has {words}.", "",
               then, "",
               "Its page shows its GPUs; mark it “keep running” there if it must stay as it is:"],
        topic="workload.idle_warned")
    workload_webhook(workload=workload, event_type="workload.idle_warned", idle_gpus=episode.gpus,
                     utilization=str(episode.utilization), message=f"{words}. {then}")


def _act(workload: Workload, episode: IdleEpisode, idle_pods: int, now: datetime) -> bool:
    plan = plan_for(workload, idle_pods)
    if plan is None:
        episode.act_after = None
        episode.save(update_fields=["act_after"])
        return False
    message = (f"{episode.gpu_hours} GPU-hours idle below the tenant's threshold: {plan.words}"
               " by the tenant's idle GPU policy. Undo it from this page.")
    try:
        workload_resize_by_policy(workload_id=workload.pk, changes=plan.changes, message=message)
    except (ValidationError, RuleViolation) as exc:
        logger.warning("idle policy could not resize %s: %s", workload, exc)
        return False
    price = quoted_price(plan.given_back.items()) if plan.given_back else None
    episode.state, episode.acted_at, episode.action = E.ACTED, timezone.now(), plan.words
    episode.restore, episode.reclaimed = plan.restore, plan.reclaimed
    episode.saved_per_hour = price.per_hour if price else None
    episode.save(update_fields=["state", "acted_at", "action", "restore", "reclaimed",
                                "saved_per_hour"])
    audit(actor=None, action="workload.idle_acted", obj=workload, tenant=workload.tenant,
          changes={"action": plan.words, "changes": plan.changes, "restore": plan.restore,
                   "reclaimed": plan.reclaimed})
    return True


# --- what people do -----------------------------------------------------------------------------


def idle_undo(*, episode_id: int, actor) -> IdleEpisode:
    """Give back what the policy took (in one click from the workload's page): the size it
    had, or the VM started again (admitted against the quota like a scale-up)."""
    with transaction.atomic():
        episode = IdleEpisode.objects.select_for_update().select_related(
            "workload__tenant").get(pk=episode_id)
        workload = episode.workload
        if not tenants_operated_by(actor).filter(pk=workload.tenant_id).exists():
            raise PermissionDenied("Only the tenant's owners and members undo the idle policy.")
        if episode.state != E.ACTED:
            raise RuleViolation("The idle policy has not acted on it: there is nothing to undo.")
        if "power" in episode.restore:
            workload_power(workload_id=workload.pk, actor=actor, action=episode.restore["power"])
        else:
            workload_scale(workload_id=workload.pk, actor=actor, changes=episode.restore)
        _end(episode, timezone.now(), E.UNDONE, actor)
        audit(actor=actor, action="workload.idle_undone", obj=workload, tenant=workload.tenant,
              changes={"restore": episode.restore})
    return episode


@transaction.atomic
def workload_keep_running(*, workload_id: int, actor, reason: str) -> Workload:
    """Mark a workload "keep running" (the idle policy never touches it) with a reason, or
    clear it (an empty reason). Audited."""
    workload = Workload.objects.select_related("tenant").get(pk=workload_id)
    if not tenants_operated_by(actor).filter(pk=workload.tenant_id).exists():
        raise PermissionDenied("Only the tenant's owners and members mark workloads.")
    reason = " ".join((reason or "").split())[:200]
    if "\x00" in reason or any("\ud800" <= char <= "\udfff" for char in reason):
        raise ValidationError({"reason": ["The reason holds a character that cannot be stored "
                                          "(NUL or a lone surrogate)."]})
    workload = Workload.objects.select_for_update().get(pk=workload_id)
    if workload.keep_running_reason == reason:
        return workload
    before, workload.keep_running_reason = workload.keep_running_reason, reason
    workload.save(update_fields=["keep_running_reason"])
    if reason:
        IdleEpisode.objects.filter(workload=workload, state__in=(E.IDLE, E.WARNED)).update(
            act_after=None)
    audit(actor=actor, action="workload.keep_running" if reason else "workload.keep_running_off",
          obj=workload, tenant=workload.tenant, changes={"before": before, "after": reason})
    return workload


# What a tenant's owners choose (null: the fleet's default), in the form's order.
POLICY_FIELDS = ("mode", "threshold_percent", "window_minutes", "grace_minutes",
                 "notebook_idle_hours")


@transaction.atomic
def idle_policy_save(*, tenant: Tenant, actor, mode: str, threshold_percent: int | None,
                     window_minutes: int | None, grace_minutes: int | None,
                     notebook_idle_hours: int | None = None) -> IdlePolicy:
    """A tenant's owners (or platform admins) choose its idle policy (and how long its
    notebooks may go unused). Audited."""
    if not tenants_managed_by(actor).filter(pk=tenant.pk).exists():
        raise PermissionDenied("Only the tenant's owners choose its idle GPU policy.")
    policy = IdlePolicy.objects.select_for_update().filter(tenant=tenant).first() or IdlePolicy(
        tenant=tenant)
    before = {f: getattr(policy, f) for f in POLICY_FIELDS}
    policy.mode, policy.threshold_percent = mode, threshold_percent
    policy.window_minutes, policy.grace_minutes = window_minutes, grace_minutes
    policy.notebook_idle_hours = notebook_idle_hours
    policy.updated_by = actor
    policy.full_clean()
    policy.save()
    audit(actor=actor, action="tenant.idle_policy", obj=policy, tenant=tenant,
          changes={"before": before, "after": {f: getattr(policy, f) for f in before}})
    return policy


