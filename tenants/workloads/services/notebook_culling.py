"""Notebooks nobody uses, stopped: each tenant's `IdlePolicy.notebook_idle_hours` (empty: the
fleet's NOTEBOOK_IDLE_HOURS; 0: never).

`notebooks_cull_sweep` (beat, every NOTEBOOK_CULL_SWEEP_SECONDS) stops a running, ready notebook
when, over the last H hours of its tenant:

- no request went through its HTTPRoute. Envoy Gateway's proxies count every request they send
  to a route rule's cluster, named `httproute/<namespace>/<route>/rule/<n>` (with
  `/backend/<m>` after it when a backend has filters): the increase of
  `envoy_cluster_upstream_rq_total` over the window is 0 for every rule of the notebook's route.
  Only requests that passed the gateway's sign-in reach the cluster, so a stranger knocking
  keeps nothing alive. A route with no series counts as unused (proxies exporting only the
  counters they used, `usedonly`, have none for it) while Prometheus holds some route's
  series; when it holds none, the gateway is not scraped, and nothing is judged;
- with GPUs, every one of them stayed below the tenant's idle GPU threshold (`gpu_activity`,
  as the idle GPU policy reads them; GPUs DCGM did not report are not idle);
- it has been running the whole window: launched, started or resized no later than its start;
- its people did not mark it "keep running".

Such a notebook is stopped through the policy path (`workload_resize_by_policy`): its timeline
says why, the change is audited, its page shows the reason while it stays stopped, and who
launched it gets a mail. Its home volume stays: Start on its page picks up where it left off.

Prometheus is read before anything is judged: one query per window in use (the tenants' hours)
for the routes, and `gpu_activity`'s three per window where notebooks hold GPUs, all at the
sweep's `now`. Prometheus down or not configured: nothing is stopped; the next sweep tries again.

What it cannot see: use through `kubectl port-forward` (it does not pass the gateway). A
browser tab left open on JupyterLab counts as use: the page polls its server.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.audit import audit
from core.errors import RuleViolation
from core.prometheus import PrometheusClient, PrometheusError

from .. import gpu_activity
from ..gpu_metrics import prometheus_client
from ..kinds import notebook
from ..models import Workload, WorkloadEvent, WorkloadStatus
from ..selectors import build_context
from .idle import RESIZES, Rules, gpu_classes, last_resized_at, rules_for
from .lifecycle import workload_resize_by_policy
from .notifications import launcher_email, workload_mail

logger = logging.getLogger(__name__)

HOUR = 3600
REQUESTS = 'envoy_cluster_upstream_rq_total{envoy_cluster_name=~"httproute/.+"}'
# Envoy Gateway's name of the cluster of an HTTPRoute's rule (and of its backend, when filtered).
ROUTE_CLUSTER = re.compile(r"httproute/(?P<namespace>[^/]+)/(?P<route>[^/]+)/rule/\d+(/.*)?")


@dataclass
class CullResult:
    judged: int = 0  # running long enough to be judged
    stopped: int = 0
    error: str = ""


def route_requests_query(window_seconds: int, at: datetime) -> str:
    """Every HTTPRoute rule's requests over the window ending `at` (counter resets included)."""
    return (f"sum by (envoy_cluster_name) (increase({REQUESTS}"
            f"[{int(window_seconds)}s] @ {at.timestamp():.3f}))")


def read_route_requests(client: PrometheusClient, *, window_seconds: int,
                        at: datetime) -> dict[tuple[str, str], float]:
    """Requests through each HTTPRoute (namespace, name) over the window; every route the
    gateway's proxies reported, used or not. Raises PrometheusError."""
    requests: dict[tuple[str, str], float] = defaultdict(float)
    for sample in client.query(route_requests_query(window_seconds, at)):
        match = ROUTE_CLUSTER.fullmatch(sample.labels.get("envoy_cluster_name", ""))
        if match:
            requests[(match["namespace"], match["route"])] += sample.value
    return dict(requests)


@dataclass(frozen=True)
class _Candidate:
    workload: Workload
    rules: Rules
    since: datetime  # running since: launched, started or resized

    @property
    def window_seconds(self) -> int:
        return self.rules.notebook_idle_hours * HOUR

    @property
    def gpus(self) -> bool:
        return bool(gpu_classes(self.workload.demand))


def _candidates(now: datetime) -> list[_Candidate]:
    running = list(
        Workload.objects.filter(kind=notebook.KEY, status=WorkloadStatus.READY,
                                keep_running_reason="")
        .exclude(spec__running=False)
        .select_related("tenant", "tenant__idle_policy", "launched_by").order_by("pk"))
    since = last_resized_at([w.pk for w in running])
    candidates = []
    for workload in running:
        rules = rules_for(getattr(workload.tenant, "idle_policy", None))
        started = since.get(workload.pk) or workload.created_at
        if rules.notebook_idle_hours and started <= now - timedelta(
                hours=rules.notebook_idle_hours):
            candidates.append(_Candidate(workload, rules, started))
    return candidates


@dataclass(frozen=True)
class _Measured:
    """What Prometheus said over each window in use: requests by route, GPU pods by namespace."""

    routes: dict[int, dict[tuple[str, str], float]]
    pods: dict[int, dict[str, list[gpu_activity.PodActivity]]]

    @classmethod
    def read(cls, client: PrometheusClient, candidates: list[_Candidate],
             now: datetime) -> _Measured:
        """Raises PrometheusError: then nothing is judged."""
        windows = {c.window_seconds for c in candidates}
        with_gpus = {c.window_seconds for c in candidates if c.gpus}
        return cls(
            routes={s: read_route_requests(client, window_seconds=s, at=now)
                    for s in sorted(windows)},
            pods={s: gpu_activity.read_pods(client, window_seconds=s, at=now)
                  for s in sorted(with_gpus)},
        )

    def unused(self, candidate: _Candidate) -> bool:
        workload, seconds = candidate.workload, candidate.window_seconds
        namespace = workload.tenant.namespace
        if self.routes[seconds].get((namespace, notebook.notebook_name(workload.name)), 0) > 0:
            return False
        if not candidate.gpus:
            return True
        pattern = workload.kind_entry.module.gpu_pods(workload.spec,
                                                      build_context(workload=workload))
        activity = gpu_activity.activity_of(self.pods[seconds], namespace=namespace,
                                            pattern=pattern)
        return activity.idle(candidate.rules.threshold_percent)


def notebooks_cull_sweep(*, client: PrometheusClient | None = None,
                         now: datetime | None = None) -> CullResult:
    """Stop every notebook nobody used over its tenant's hours (see the module)."""
    client = client or prometheus_client()
    if client is None:
        return CullResult(error="PROMETHEUS_URL is not set: notebooks are not culled.")
    now = now or timezone.now()
    candidates = _candidates(now)
    result = CullResult(judged=len(candidates))
    try:
        measured = _Measured.read(client, candidates, now)
    except PrometheusError as exc:
        logger.warning("notebook cull sweep: Prometheus did not answer: %s", exc)
        result.error = f"Prometheus did not answer: {exc}"
        return result
    # No route's counters at all: the gateway is not scraped, which is not nobody using it.
    unscraped = sorted(s // HOUR for s, routes in measured.routes.items() if not routes)
    if unscraped:
        result.error = ("Prometheus holds no request counts of the gateway's routes over "
                        f"{', '.join(map(str, unscraped))} hours: those notebooks are not judged.")
        logger.warning("notebook cull sweep: %s", result.error)
    for candidate in candidates:
        if (measured.routes[candidate.window_seconds] and measured.unused(candidate)
                and _stop(candidate, now)):
            result.stopped += 1
    return result


def _stop(candidate: _Candidate, now: datetime) -> bool:
    workload, hours = candidate.workload, candidate.rules.notebook_idle_hours
    why = (f"Stopped after {hours} hour{'s' * (hours != 1)} without use: no requests through its"
           f" URL{', GPUs idle' if candidate.gpus else ''}")
    with transaction.atomic():
        # Read again under its lock: a person may have started, stopped, resized or kept it
        # since the sweep listed it, and a sweep running at the same time may have stopped it.
        current = (Workload.objects.select_for_update()
                   .filter(pk=workload.pk, status=WorkloadStatus.READY, keep_running_reason="")
                   .exclude(spec__running=False).first())
        if current is None or WorkloadEvent.objects.filter(
                workload=workload, kind__in=RESIZES, created_at__gt=candidate.since).exists():
            return False
        try:
            workload_resize_by_policy(
                workload_id=workload.pk, changes={"power": "stop"},
                message=f"{why}. Its home volume is kept: start it to pick up where you left off.")
        except (ValidationError, RuleViolation) as exc:
            logger.warning("notebook cull sweep could not stop %s: %s", workload, exc)
            return False
        audit(actor=None, action="workload.notebook_culled", obj=workload, tenant=workload.tenant,
              changes={"hours": hours, "gpus_idle": candidate.gpus,
                       "running_since": candidate.since.isoformat(), "at": now.isoformat()})
        workload_mail(
            workload=workload, to=launcher_email(workload),
            subject=f"Notebook {workload.name} of {workload.tenant.name} was stopped: unused for"
                    f" {hours} hour{'s' * (hours != 1)}",
            lines=["Hello,", "", f"Your notebook {workload.name} in {workload.tenant.name}: {why}"
                   " (the tenant's policy for unused notebooks).", "",
                   "Its home volume is kept. Start it again from its page to pick up where you"
                   " left off:"],
            topic="workload.notebook_culled")
    return True
