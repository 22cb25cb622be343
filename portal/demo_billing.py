"""The demo's chargeback: a rate card, two months of workload history, metered and invoiced.

Everything is computed by the portal's own code: the workloads are launched, scaled, stopped
and deleted through the services on the simulated fleet, and only their history is dated back
(as if it had happened over the past weeks); the allocated usage is metered from that history,
the measured usage from DCGM-shaped series generated here and read by the same code that reads
Prometheus; invoices are drafted, issued, paid and credited through the billing services.
Deterministic, and loading twice changes nothing.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from tenants.models import Tenant, Workload, WorkloadEvent
from tenants.workloads import services as workloads

UTC = datetime.UTC
D = Decimal


def month_start(value: datetime.datetime) -> datetime.datetime:
    return value.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def previous_month(value: datetime.datetime) -> datetime.datetime:
    return month_start(month_start(value) - datetime.timedelta(days=1))


# The rate card: (resource class, price, unit). Storage is quoted per GiB-month.
RATES: tuple[tuple[str, Decimal, str], ...] = (
    ("gpu:nvidia-h200", D("4.20"), "hour"),
    ("gpu:nvidia-h100-80gb", D("3.10"), "hour"),
    ("gpu:nvidia-a100-80gb", D("2.05"), "hour"),
    ("gpu:nvidia-l40s", D("1.15"), "hour"),
    ("gpu:nvidia-rtx-4000-ada", D("0.45"), "hour"),
    ("mig:nvidia-a100-80gb:1g.10gb", D("0.32"), "hour"),
    ("mig:nvidia-a100-80gb:2g.20gb", D("0.62"), "hour"),
    ("mig:nvidia-a100-80gb:3g.40gb", D("0.92"), "hour"),
    ("mig:nvidia-h100-80gb:1g.10gb", D("0.48"), "hour"),
    ("hami:nvidia-l40s:memory-gib", D("0.012"), "hour"),
    ("hami:nvidia-l40s:cores", D("0.006"), "hour"),
    ("cpu", D("0.035"), "hour"),
    ("memory-gib", D("0.0045"), "hour"),
    ("storage-gib", D("0.08"), "month"),
)
# The H100 price drops mid-month last month: its invoices show two H100 lines.
H100_NEW_PRICE = D("2.80")
H100_PRICE_CHANGE_DAY = 15


@dataclass(frozen=True)
class Step:
    """Something done to a workload `days` (and `hours`) before now, through the services."""

    days: float
    action: str  # "launch", "scale", "stop", "delete"
    changes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class History:
    """A workload's past: the demo workload it is (or a past one launched here) and its steps."""

    tenant: str
    name: str
    launched_by: str
    steps: tuple[Step, ...]
    kind: str = ""
    spec: dict = field(default_factory=dict)


DEMO_SSH_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMgD8uC8AVXeT7ZNENLj3eGCoqOWBy09yW8vJWtBG5Oa"
    " demo@ai-factory"
)
# Days are counted back from now; the demo's workloads are launched weeks ago, a few past ones
# ran last month only, one was scaled mid-month and one VM was stopped (it keeps its disk).
HISTORIES: tuple[History, ...] = (
    History("helix", "eval-34b", "olivia", (Step(48.4, "launch"),)),
    History("helix", "pretrain-cluster", "olivia", (Step(40.2, "launch"),)),
    History("helix", "pretrain-34b", "olivia",
            (Step(44.6, "launch"), Step(9.3, "delete")),
            kind="inference",
            spec={"model_uri": "s3://helix-models/34b/step-60000", "gpu": "gpu:nvidia-h200",
                  "gpus_per_replica": 8, "min_replicas": 1, "max_replicas": 2, "cpu": 64,
                  "memory_gib": 512}),
    History("nova", "support-assistant", "mike",
            (Step(46.1, "launch"), Step(21.55, "scale", {"max_replicas": 3}))),
    History("nova", "dev-cluster", "mike", (Step(38.7, "launch"),)),
    History("nova", "support-chat", "mike", (Step(30.3, "launch"),)),
    History("nova", "rerank-l40s", "mike",
            (Step(35.2, "launch"), Step(12.8, "delete")),
            kind="inference",
            spec={"model_uri": "hf://BAAI/bge-reranker-v2-m3", "gpu": "gpu:nvidia-l40s",
                  "gpus_per_replica": 2, "min_replicas": 1, "max_replicas": 2, "cpu": 8,
                  "memory_gib": 64}),
    History("atlas", "eval-slurm", "ari", (Step(33.4, "launch"),)),
    History("atlas", "eval-judge", "ari", (Step(27.9, "launch"),)),
    History("atlas", "redteam-box", "ari", (Step(41.05, "launch"), Step(6.2, "stop"))),
    History("orbit", "notebook", "omar", (Step(36.5, "launch"),)),
    History("orbit", "lora-a100", "omar",
            (Step(42.3, "launch"), Step(15.1, "delete")),
            kind="vm",
            spec={"image": "rocky-9", "cpu": 32, "memory_gib": 256, "disk_gib": 500,
                  "gpu": "gpu:nvidia-a100-80gb", "gpus": 4, "ssh_public_key": DEMO_SSH_KEY}),
)


def _events_after(workload: Workload, last_id: int | None) -> list[int]:
    events = WorkloadEvent.objects.filter(workload=workload)
    if last_id is not None:
        events = events.filter(pk__gt=last_id)
    return list(events.order_by("pk").values_list("pk", flat=True))


def _date_back(workload: Workload, event_ids: list[int], at: datetime.datetime) -> None:
    """Date events as if they had happened at `at` (a few seconds apart, in their order)."""
    for offset, pk in enumerate(event_ids):
        WorkloadEvent.objects.filter(pk=pk).update(
            created_at=at + datetime.timedelta(seconds=20 * offset)
        )


def _run_step(workload: Workload | None, history: History, step: Step, users: dict,
              apply: Callable[[int], None]) -> Workload:
    actor = users[history.launched_by]
    if step.action == "launch" and workload is None:
        workload = workloads.workload_launch(
            tenant=Tenant.objects.get(slug=history.tenant), actor=actor, kind=history.kind,
            name=history.name, spec=history.spec,
        )
        apply(workload.pk)
    elif step.action == "scale":
        workloads.workload_scale(workload_id=workload.pk, actor=actor, changes=step.changes)
        apply(workload.pk)
    elif step.action == "stop":
        workloads.workload_power(workload_id=workload.pk, actor=actor, action="stop")
        apply(workload.pk)
    elif step.action == "delete":
        workloads.workload_delete(workload_id=workload.pk, actor=actor)
        workloads.workload_reconcile(workload_id=workload.pk)
        workloads.workload_reconcile(workload_id=workload.pk)
    return Workload.objects.get(pk=workload.pk)


def workload_histories(*, users: dict, now: datetime.datetime,
                       apply: Callable[[int], None]) -> None:
    """Give the demo's workloads their past, and run the past ones that are gone by now.

    `apply(workload_id)` brings a workload to what its spec says on the simulated fleet (the
    demo's reconcile-and-observe). Each step runs through the services; its events are then
    dated `step.days` back. Only done once: a workload whose launch is already dated back is
    left alone.
    """
    if settings.FLEET_BACKEND != "simulated":
        return
    for history in HISTORIES:
        workload = Workload.objects.filter(
            tenant__slug=history.tenant, name=history.name
        ).order_by("pk").first()
        if workload is not None and workload.created_at < now - datetime.timedelta(days=1):
            continue
        if workload is None and not history.kind:
            continue
        last_id = None
        for step in history.steps:
            if workload is not None and step.action in ("launch", "stop") and not history.kind:
                # A demo workload the loader launched (and perhaps stopped) just now: date
                # what it did back, its launch before its first power action, the stop after.
                events = _events_after(workload, last_id)
                power = list(WorkloadEvent.objects.filter(
                    pk__in=events, kind=WorkloadEvent.Kind.POWER).values_list("pk", flat=True))
                first_power = min(power) if power else None
                if step.action == "launch":
                    ids = [pk for pk in events if first_power is None or pk < first_power]
                else:
                    ids = [pk for pk in events if first_power is not None and pk >= first_power]
            else:
                workload = _run_step(workload, history, step, users, apply)
                ids = _events_after(workload, last_id)
            at = (now - datetime.timedelta(days=step.days)).replace(microsecond=0)
            _date_back(workload, ids, at)
            last_id = max(ids) if ids else last_id
            if step.action == "launch":
                ready = WorkloadEvent.objects.filter(
                    workload=workload, to_status="ready"
                ).order_by("created_at").values_list("created_at", flat=True).first()
                Workload.objects.filter(pk=workload.pk).update(created_at=at, ready_at=ready)
            if step.action == "delete":
                gone = WorkloadEvent.objects.filter(
                    workload=workload, to_status="deleted"
                ).values_list("created_at", flat=True).first()
                Workload.objects.filter(pk=workload.pk).update(deleted_at=gone)


def now_hour() -> datetime.datetime:
    return timezone.now().astimezone(UTC).replace(minute=0, second=0, microsecond=0)
