"""Whether each cluster answers: marked unreachable with a backoff, probed, and recovered.

The fleet gateway's guard reports here (FLEET_REACHABILITY) when a call gets no answer, and when
a call succeeds while its cluster is marked unreachable. The first failure marks the cluster
unreachable (audited once); each failure of a due try doubles the wait before the next
(CLUSTER_BACKOFF_SECONDS up to CLUSTER_BACKOFF_MAX_SECONDS), and until then every call to it
fails at once. The first answer marks it reachable again (audited once, by the one process
whose conditional update wins) and queues its recovery: CLUSTER_RECOVERY_TASKS, each with the
cluster, on the cluster's own queue (its sync, its workloads' observe sweep and the reconcile
of whatever is not in sync on it; all level-triggered, so a recovery queued twice does no harm).

A cluster that answers is never written to on its calls: only the probe (every
CLUSTER_PROBE_SECONDS, to every cluster in service, so an idle cluster's outage is noticed too)
records `last_contact_at`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.audit import audit
from core.fleet import FleetError, Reachability, get_gateway
from core.queueing import enqueue_on_commit, send_task, workers_serve_clusters

from ..models import Cluster
from .connections import reachability_of

logger = logging.getLogger(__name__)

PROBE = "inventory.tasks.cluster_probe_task"
FIELDS = ("reachable", "unreachable_since", "failures", "next_probe_at", "last_error")


def backoff(failures: int) -> timedelta:
    """How long a cluster that failed `failures` due tries in a row is left alone."""
    base, most = settings.CLUSTER_BACKOFF_SECONDS, settings.CLUSTER_BACKOFF_MAX_SECONDS
    return timedelta(seconds=min(base * 2 ** max(failures - 1, 0), most))


def cluster_reachability_report(cluster: str, error: FleetError | None) -> Reachability:
    """The gateway guard's report: `error` (a call got no answer) or None (a call to a cluster
    marked unreachable got one). Returns the cluster's reachability now."""
    if error is None:
        cluster_mark_reachable(cluster=cluster)
        return Reachability()
    return cluster_mark_unreachable(cluster=cluster, error=error)


@transaction.atomic
def cluster_mark_unreachable(*, cluster: str, error: FleetError) -> Reachability:
    """Record a call to `cluster` that got no answer. A failure while the cluster waits for its
    next try (another process's call that was under way) changes nothing."""
    now = timezone.now()
    row = Cluster.objects.select_for_update().filter(slug=cluster).first()
    if row is None:  # gone meanwhile: nothing to record, nothing to wait for
        return Reachability(reachable=False, since=now, last_error=str(error))
    current = reachability_of({name: getattr(row, name) for name in FIELDS})
    if current.waiting(now):
        return current
    first = row.reachable
    row.reachable = False
    row.failures = 1 if first else row.failures + 1
    row.unreachable_since = now if first or row.unreachable_since is None else row.unreachable_since
    row.next_probe_at = now + backoff(row.failures)
    row.last_error = str(error)[:2000]
    row.save(update_fields=list(FIELDS))
    if first:
        audit(
            actor=None,
            action="cluster.unreachable",
            obj=row,
            changes={
                "cluster": cluster,
                "error": row.last_error[:500],
                "next_probe_at": row.next_probe_at.isoformat(),
            },
        )
        logger.warning("Cluster %s does not answer: %s", cluster, row.last_error)
    return reachability_of({name: getattr(row, name) for name in FIELDS})


@transaction.atomic
def cluster_mark_reachable(*, cluster: str) -> bool:
    """Record that `cluster` answers again and queue its recovery; False when it was not marked
    unreachable (or another process recorded it first: one recovery, one audit event)."""
    row = Cluster.objects.select_for_update().filter(slug=cluster, reachable=False).first()
    if row is None:
        return False
    now = timezone.now()
    Cluster.objects.filter(pk=row.pk).update(
        reachable=True,
        unreachable_since=None,
        failures=0,
        next_probe_at=None,
        last_error="",
        last_contact_at=now,
    )
    audit(
        actor=None,
        action="cluster.reachable",
        obj=row,
        changes={
            "cluster": cluster,
            "failures": row.failures,
            "unreachable_since": row.unreachable_since.isoformat()
            if row.unreachable_since
            else None,
        },
    )
    logger.warning("Cluster %s answers again (after %d failed tries)", cluster, row.failures)
    for task_name in settings.CLUSTER_RECOVERY_TASKS:
        enqueue_on_commit(task_name, cluster, cluster=cluster)
    return True


def cluster_probe(*, cluster: str) -> str:
    """Ask `cluster` whether it answers (through the guard, which records a change either way)
    and record the contact; its server version. Raises the gateway's FleetError."""
    version = get_gateway(cluster).probe()
    Cluster.objects.filter(slug=cluster).update(last_contact_at=timezone.now())
    return version


def clusters_probe_sweep() -> int:
    """Queue a probe of every cluster in service that is reachable (an idle cluster's outage is
    noticed too) or due for its next try, each on its own queue; first ask the workers to serve
    the queues of clusters added since they started. How many were queued."""
    workers_serve_clusters()
    now = timezone.now()
    due = Cluster.objects.in_service().filter(
        Q(reachable=True) | Q(next_probe_at__isnull=True) | Q(next_probe_at__lte=now)
    )
    clusters = list(due.values_list("slug", flat=True))
    for cluster in clusters:
        send_task(PROBE, cluster, cluster=cluster)
    return len(clusters)


@dataclass(frozen=True)
class ConnectionCheck:
    """What a platform admin's connection check found."""

    cluster: str
    ok: bool
    version: str = ""
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "ok": self.ok,
            "version": self.version,
            "error": self.error,
        }


def cluster_connection_check(*, cluster: Cluster, actor: Any) -> ConnectionCheck:
    """Try the cluster now, even while it waits for its next try (an admin asks), recording
    what comes of it as any call would; audited."""
    try:
        version = get_gateway(cluster.slug, fail_fast=False).probe()
    except FleetError as exc:
        result = ConnectionCheck(cluster=cluster.slug, ok=False, error=str(exc)[:2000])
    else:
        Cluster.objects.filter(pk=cluster.pk).update(last_contact_at=timezone.now())
        result = ConnectionCheck(cluster=cluster.slug, ok=True, version=version)
    audit(
        actor=actor,
        action="cluster.connection_check",
        obj=cluster,
        changes={k: v for k, v in result.as_dict().items() if v not in ("", None)},
    )
    return result
