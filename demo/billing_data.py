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
from fractions import Fraction

from django.conf import settings
from django.utils import timezone

from billing.calculations import month_forecast
from billing.calculations.capacity import gpu_share
from billing.models import Invoice, Rate, UsageRecord
from billing.selectors.usage import month_spend
from billing.services import accounts, budgets, invoicing, metering, payments, rates
from billing.services.metering_measured import MeasuredUsage, Measurement
from inventory.models import DEFAULT_CLUSTER, HealthEvent, Node
from tenants.models import Tenant, Workload, WorkloadEvent
from tenants.workloads import services as workloads

from .clusters import FRANKFURT

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


# The cost labels the demo's workloads are launched with (a project or an experiment each), so
# that the spend page's cost by label has something to show.
COST_LABELS = {
    "support-assistant": "support bot", "support-chat": "support bot",
    "rerank-l40s": "search", "search-embeddings": "search",
    "eval-34b": "evals", "eval-slurm": "evals", "eval-judge": "evals", "eval-analysis": "evals",
    "pretrain-cluster": "pretrain-34b", "pretrain-34b": "pretrain-34b",
    "lora-a100": "lora-adapters", "adapter-slurm": "lora-adapters",
}


@dataclass(frozen=True)
class Step:
    """Something done to a workload `days` (and `hours`) before now, through the services."""

    days: float
    action: str  # "launch", "scale", "stop", "delete"
    changes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class History:
    """A workload's past: the demo workload it is (or a past one launched here, on `cluster`)
    and its steps."""

    tenant: str
    name: str
    launched_by: str
    steps: tuple[Step, ...]
    kind: str = ""
    spec: dict = field(default_factory=dict)
    cluster: str = DEFAULT_CLUSTER


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
                  "memory_gib": 512},
            cluster=FRANKFURT),
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
                  "gpu": "gpu:nvidia-a100-80gb", "gpus": 4, "ssh_public_key": DEMO_SSH_KEY},
            cluster=FRANKFURT),
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
            name=history.name, spec=history.spec, cluster=history.cluster,
            label=COST_LABELS.get(history.name, ""),
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




def rate_card(*, now: datetime.datetime) -> None:
    """The demo's rates, in force since a year ago; the H100 gets cheaper mid last month."""
    if Rate.objects.exists():
        return
    since = month_start(now - datetime.timedelta(days=365))
    change = previous_month(now) + datetime.timedelta(days=H100_PRICE_CHANGE_DAY - 1)
    for resource, price, unit in RATES:
        ends = change if resource == "gpu:nvidia-h100-80gb" else None
        rates.rate_save(actor=None, rate=Rate(
            resource=resource, unit_price=price, unit=unit, valid_from=since, valid_to=ends,
            note="Demo rate card",
        ))
    rates.rate_save(actor=None, rate=Rate(
        resource="gpu:nvidia-h100-80gb", unit_price=H100_NEW_PRICE, valid_from=change,
        note="H100 price cut after the H200 expansion",
    ))


# Which hosts each GPU class of a tenant runs on, filled in workload order, each host up to the
# GPUs the inventory lists on it (a MIG instance of g slices takes g/7 of one).
GPU_PREFIXES = ("gpu:", "mig:")


@dataclass(frozen=True)
class Hosts:
    """The demo fleet as the generator places GPUs on it."""

    by_class: dict[str, list[str]]  # the hostnames that carry each GPU class, in fleet order
    gpus: dict[str, int]  # GPUs per hostname


def _hosts_by_class() -> Hosts:
    """The hostnames that carry each GPU class, in the demo fleet's order (reserved first)."""
    hosts: dict[str, list[str]] = {}
    gpus: dict[str, int] = {}
    for node in Node.objects.order_by("-reserved_for", "hostname").prefetch_related("gpus"):
        gpus[node.hostname] = len(node.gpus.all())
        models = {gpu.model for gpu in node.gpus.all()}
        profiles = {p for gpu in node.gpus.all() for p in (gpu.mig_layout or [])}
        for model in models:
            key = f"gpu:{model}"
            hosts.setdefault(key, []).append(node.hostname)
            for profile in profiles:
                hosts.setdefault(f"mig:{model}:{profile}", []).append(node.hostname)
    return Hosts(hosts, gpus)


def _utilization(tenant_id: int, workload_id: int, hour: datetime.datetime) -> int:
    """A plausible GPU utilization in percent: busier by day, a base per workload, some idle."""
    base = 35 + (workload_id * 37 + tenant_id * 11) % 50
    daytime = 8 <= hour.hour < 20 and hour.weekday() < 5
    wobble = (hour.day * 13 + hour.hour * 7 + workload_id) % 17 - 8
    value = base + (12 if daytime else -18) + wobble
    return max(3, min(97, value))


def measured_series(
    *, since: datetime.datetime, until: datetime.datetime, hosts: Hosts
) -> dict[datetime.datetime, Measurement]:
    """What the DCGM exporter would have shown, hour by hour: each workload's GPUs on the hosts
    that carry its class, never more than a host has (GPUs allocated beyond the fleet are not
    seen: they do not exist), present most of the time they were held, busy as `_utilization`
    says; and OpenCost's view of the same GPUs (one tenant-hour off, to show the
    cross-check)."""
    records = (
        UsageRecord.objects.filter(
            source=UsageRecord.Source.ALLOCATED, hour__gte=since, hour__lt=until
        )
        .filter(resource__regex=r"^(gpu|mig):")
        .order_by("hour", "tenant_id", "workload_id", "resource")
        .values_list("hour", "tenant_id", "workload_id", "resource", "unit_seconds")
    )
    by_hour: dict[datetime.datetime, list[tuple]] = {}
    for hour, *row in records:
        by_hour.setdefault(hour, []).append(tuple(row))
    series = {}
    hour = since
    while hour < until:
        series[hour] = _measurement(hour, by_hour.get(hour, []), hosts)
        hour += datetime.timedelta(hours=1)
    return series


def _placed(resource: str, units: int, room: dict[str, Fraction], hosts: Hosts
            ) -> list[tuple[str, int]]:
    """Where `units` of `resource` go this hour: (host, units) on the class's hosts in order,
    each taking what its GPUs left (`room`) allow."""
    share = gpu_share(resource)
    placed = []
    for host in hosts.by_class.get(resource, []):
        left = room.setdefault(host, Fraction(hosts.gpus.get(host, 0)))
        fits = min(units, int(left / share))
        if fits:
            placed.append((host, fits))
            room[host] = left - fits * share
            units -= fits
        if not units:
            break
    return placed


def _measurement(hour: datetime.datetime, records: list[tuple], hosts: Hosts) -> Measurement:
    used: dict[tuple[int, str, str], list[int]] = {}
    room: dict[str, Fraction] = {}
    opencost: dict[int, int] = {}
    for tenant_id, workload_id, resource, seconds in records:
        units = -(-seconds // 3600)  # the GPUs held at once (for part of the hour, maybe)
        for host, count in _placed(resource, units, room, hosts):
            present = seconds * count // units * 97 // 100  # pods restarting now and then
            busy = present * _utilization(tenant_id, workload_id, hour) // 100
            total = used.setdefault((tenant_id, host, resource), [0, 0])
            total[0] += present
            total[1] += busy
        if resource.startswith("gpu:"):
            opencost[tenant_id] = opencost.get(tenant_id, 0) + seconds
    odd = hour.day == 9 and hour.hour == 14
    return Measurement(
        usage=[
            MeasuredUsage(tenant_id, host, resource, present, busy)
            for (tenant_id, host, resource), (present, busy) in sorted(used.items())
            if present
        ],
        unattributed_seconds=0,
        opencost={t: s * (3 if odd and i == 0 else 1) for i, (t, s) in
                  enumerate(sorted(opencost.items()))},
    )


def meter(*, since: datetime.datetime, until: datetime.datetime) -> None:
    """Meter every hour of [since, until) from both sources, as the hourly task would have
    (in one span: the same records, written at once)."""
    metering.usage_meter_span(start=since, end=until)
    metering.usage_meter_measurements(
        measurements=measured_series(since=since, until=until, hosts=_hosts_by_class())
    )


def downtime(*, now: datetime.datetime) -> None:
    """A GPU fell off the bus on one of Helix's reserved H200 nodes last month, while its
    pre-training ran there: Helix's invoice credits those GPU-hours."""
    node = Node.objects.filter(reserved_for="helix").order_by("hostname")[1:2].first()
    if node is None or HealthEvent.objects.filter(node=node, severity="critical").exists():
        return
    opened = previous_month(now) + datetime.timedelta(days=11, hours=9, minutes=40)
    HealthEvent.objects.create(
        node=node, gpu=node.gpus.order_by("index").first(), kind=HealthEvent.Kind.XID,
        subject="gpu:0", severity="critical", source=HealthEvent.Source.DCGM, value=79,
        detail="XID 79: GPU has fallen off the bus", opened_at=opened,
        last_seen_at=opened + datetime.timedelta(hours=5),
        resolved_at=opened + datetime.timedelta(hours=6, minutes=20),
        remediation=HealthEvent.Remediation.DRAIN,
        resolution="GPU reseated, burn-in passed", notified_tenants=["helix"],
    )


def invoices(*, users: dict, now: datetime.datetime) -> None:
    """Last month invoiced: Helix's paid (with its downtime credit), Nova's issued with a
    credit note and half of the rest paid (a balance due), Orbit's issued, Atlas's left in
    draft for finance to look at."""
    finance = users["fiona"]
    last = previous_month(now)
    drafts = {i.tenant.slug: i for i in invoicing.invoices_draft_month(month=last.date())}
    for slug in ("helix", "nova", "orbit"):
        if slug in drafts:
            invoicing.invoice_issue(invoice_id=drafts[slug].pk, actor=finance,
                                    issue_date=now.date())
    if "helix" in drafts:
        invoicing.invoice_mark_paid(invoice_id=drafts["helix"].pk, actor=finance,
                                    reference=f"SEPA-{last:%Y%m}-HELIX")
    if "nova" in drafts:
        invoicing.credit_note_create(
            invoice_id=drafts["nova"].pk, actor=finance, amount=D("150.00"),
            reason="Goodwill: support-assistant ran degraded for a day during the upgrade.",
        )
        nova = Invoice.objects.get(pk=drafts["nova"].pk)
        half = (nova.balance_due / 2).quantize(D("0.01"))
        if half > 0:
            payments.payment_record(invoice_id=nova.pk, actor=finance, amount=half,
                                    reference=f"SEPA-{last:%Y%m}-NOVA-1")


def near_budget(*, now: datetime.datetime) -> None:
    """Atlas spends close to its budget this month: its budget is set a little above what it
    has spent so far, and the 80 % alert goes out."""
    atlas = Tenant.objects.filter(slug="atlas").first()
    if atlas is None:
        return
    spend = month_spend(tenant_ids=[atlas.pk], now=now)[atlas.pk]
    forecast = month_forecast(spend.spent, now=now, month_start=spend.month_start,
                              month_end=spend.month_end)
    # Near the budget: 86 % spent late in the month, or a forecast just under it early on.
    budget = max(D("100"), spend.spent / D("0.86"), forecast / D("0.97")).quantize(D("1"))
    accounts.billing_account_update(actor=None, tenant=atlas, monthly_budget=budget)
    budgets.budget_alerts_send(now=now)


def load_billing_demo(*, users: dict, apply: Callable[[int], None]) -> None:
    """The whole chargeback demo, once: later loads find the invoices and change nothing."""
    if Invoice.objects.exists() or settings.FLEET_BACKEND != "simulated":
        return
    now = timezone.now().astimezone(UTC)
    rate_card(now=now)
    workload_histories(users=users, now=now, apply=apply)
    downtime(now=now)
    since = previous_month(now)
    meter(since=since, until=now.replace(minute=0, second=0, microsecond=0))
    invoices(users=users, now=now)
    near_budget(now=now)
