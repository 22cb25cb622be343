"""The demo's idle GPUs: what the idle sweep would have found, had the demo a Prometheus.

The demo runs without one (`make demo` is pure Python), so the sweep measures nothing there;
these rows are what it writes: each GPU workload's last-hour utilization, Nova's opt-in policy
(warn, then give back), an endpoint of Nova's warned and due to be scaled down, Orbit's VM idle
(Orbit's policy warns only), and an earlier episode the policy acted on and Nova undid.
"""

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from tenants.models import IdleEpisode, IdlePolicy, Tenant, Workload, WorkloadEvent
from tenants.quota.pricing import quoted_price
from tenants.workloads.services.idle import plan_for

# Last-hour mean GPU utilization of the demo's running GPU workloads (percent).
UTILIZATION = {
    ("nova", "support-assistant"): "0.80",
    ("nova", "support-chat"): "34.50",
    ("atlas", "eval-slurm"): "62.10",
    ("atlas", "eval-judge"): "55.00",
    ("orbit", "notebook"): "1.90",
    ("helix", "eval-34b"): "71.30",
}
POLICIES = {"nova": ("act", 5, 60, 120), "orbit": ("warn", 3, 120, None)}


def _workload(slug: str, name: str) -> Workload | None:
    return Workload.objects.filter(tenant__slug=slug, name=name).exclude(
        status=Workload.Status.DELETED).first()


def _per_hour(workload: Workload, share: Decimal = Decimal(1)) -> Decimal | None:
    """What its GPUs cost per hour (times `share`: the idle part of them)."""
    price = quoted_price(_gpus(workload).items())
    return None if price is None else (price.per_hour * share).quantize(Decimal("0.000001"))


def _gpus(workload: Workload) -> dict[str, int]:
    return {r: n for r, n in workload.demand.items() if r.split(":", 1)[0] in ("gpu", "mig")}


def _episode(workload: Workload, *, idle_for: timedelta, seen_at=None, **fields) -> None:
    seen_at = seen_at or timezone.now()
    held = _gpus(workload)
    IdleEpisode.objects.create(workload=workload, started_at=seen_at - idle_for, seen_at=seen_at,
                               resource=max(held, key=held.get), **fields)


def load_idle_gpus() -> None:
    """Idempotent: nothing is added once Nova has a policy."""
    if IdlePolicy.objects.filter(tenant__slug="nova").exists():
        return
    now = timezone.now()
    for (slug, name), percent in UTILIZATION.items():
        Workload.objects.filter(tenant__slug=slug, name=name).update(
            gpu_utilization=Decimal(percent), gpu_measured_at=now)
    for slug, (mode, threshold, window, grace) in POLICIES.items():
        IdlePolicy.objects.create(tenant=Tenant.objects.get(slug=slug), mode=mode,
                                  threshold_percent=threshold, window_minutes=window,
                                  grace_minutes=grace)
    assistant = _workload("nova", "support-assistant")
    plan = plan_for(assistant, 0) if assistant is not None else None
    if assistant is not None and plan is not None:
        # Its one running replica idles at 0.8 %: the policy would scale it to its minimum.
        _episode(assistant, idle_for=timedelta(hours=2, minutes=20),
                 state=IdleEpisode.State.WARNED, gpus=1, utilization=Decimal("0.80"),
                 warned_at=now - timedelta(hours=1, minutes=20),
                 act_after=now + timedelta(minutes=40), idle_per_hour=_per_hour(assistant))
        WorkloadEvent.objects.create(
            workload=assistant, kind=WorkloadEvent.Kind.IDLE, reason="IdleWarning",
            created_at=now - timedelta(hours=1, minutes=20), demand=assistant.demand,
            message="1 idle GPU at 0.80% utilization: 1.0 GPU-hours. Unless someone uses it or "
                    f"marks it “keep running”, it will be {plan.words} when the grace period "
                    "ends.")
        # Last week: scaled to its minimum at night, scaled back by Mike in the morning.
        saved = quoted_price(plan.given_back.items())
        week = now - timedelta(days=6)
        _episode(assistant, idle_for=timedelta(hours=3), seen_at=week,
                 state=IdleEpisode.State.UNDONE, gpus=1, utilization=Decimal("0.40"),
                 warned_at=week - timedelta(hours=2), acted_at=week,
                 action=plan.words, restore=plan.restore, reclaimed=plan.reclaimed,
                 saved_per_hour=saved.per_hour if saved else None,
                 ended_at=week + timedelta(hours=9), ended_by=assistant.launched_by,
                 idle_per_hour=_per_hour(assistant))
    notebook = _workload("orbit", "notebook")
    if notebook is not None:
        _episode(notebook, idle_for=timedelta(hours=5), state=IdleEpisode.State.WARNED,
                 gpus=1, utilization=Decimal("1.90"), warned_at=now - timedelta(hours=3),
                 idle_per_hour=_per_hour(notebook))
