"""Health: DCGM findings become health events, and the remediation policy acts on new ones.

An open event is keyed by (node, kind, subject): ingestion every minute updates it rather than
opening another, so replaying a window changes nothing. A new event, or one whose severity
rose, goes through the policy: cordon at one severity, drain to maintenance at a higher one.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.audit import audit
from core.prometheus import PrometheusClient, PrometheusError

from .. import dcgm
from ..models import GPU, Cluster, HealthEvent, InventoryRun, Node, NodeState
from ..models.health import SEVERITY_RANK, Severity
from . import lifecycle, notifications

GPU_HEALTH_FOR = {Severity.CRITICAL: GPU.Health.FAILED, Severity.WARNING: GPU.Health.DEGRADED}


@dataclass(frozen=True)
class RemediationPolicy:
    """Cordon at `cordon_at` severity or worse, drain to maintenance at `drain_at` (None: never)."""

    cordon_at: str | None
    drain_at: str | None

    @classmethod
    def from_settings(cls) -> "RemediationPolicy":
        def severity(value: str) -> str | None:
            return None if value in ("", "off", "never") else Severity(value).value

        return cls(
            cordon_at=severity(settings.REMEDIATION_CORDON_AT),
            drain_at=severity(settings.REMEDIATION_DRAIN_AT),
        )

    def action_for(self, severity: str) -> str:
        rank = SEVERITY_RANK[Severity(severity)]
        if self.drain_at and rank >= SEVERITY_RANK[Severity(self.drain_at)]:
            return HealthEvent.Remediation.DRAIN
        if self.cordon_at and rank >= SEVERITY_RANK[Severity(self.cordon_at)]:
            return HealthEvent.Remediation.CORDON
        return HealthEvent.Remediation.NONE


def dcgm_policy() -> dcgm.Policy:
    return dcgm.Policy(
        critical_xids=frozenset(settings.REMEDIATION_CRITICAL_XIDS),
        window_minutes=settings.HEALTH_LOOKBACK_MINUTES,
    )


@dataclass
class RecordResult:
    opened: list[int] = field(default_factory=list)
    updated: int = 0
    remediated: dict[int, str] = field(default_factory=dict)
    unknown_hosts: list[str] = field(default_factory=list)


def _worst_per_fault(observations: Iterable[dcgm.Observation]) -> list[dcgm.Observation]:
    worst: dict[tuple[str, str, str], dcgm.Observation] = {}
    for obs in observations:
        key = (obs.host, obs.kind, obs.subject)
        if key not in worst or SEVERITY_RANK[obs.severity] > SEVERITY_RANK[worst[key].severity]:
            worst[key] = obs
    return list(worst.values())


def _remediate(event: HealthEvent, policy: RemediationPolicy) -> str:
    """Apply the policy to a new or escalated event; returns what was done."""
    action = policy.action_for(event.severity)
    node = Node.objects.select_for_update().get(pk=event.node_id)
    reason = f"health: {event.get_kind_display()} on {event.subject} ({event.severity})"
    reason += f": {event.detail}" if event.detail else ""
    done = HealthEvent.Remediation.NONE
    if action == HealthEvent.Remediation.DRAIN and node.state in (
        NodeState.AVAILABLE,
        NodeState.CORDONED,
    ):
        lifecycle.node_drain(node_id=node.pk, actor=None, reason=reason, health_event_id=event.pk)
        done = HealthEvent.Remediation.DRAIN
    elif action != HealthEvent.Remediation.NONE and node.state == NodeState.AVAILABLE:
        lifecycle.node_cordon(node_id=node.pk, actor=None, reason=reason)
        notifications.node_tenants_notify(node_id=node.pk, health_event_id=event.pk)
        done = HealthEvent.Remediation.CORDON
    if done != HealthEvent.Remediation.NONE:
        event.remediation = done
        event.save(update_fields=["remediation"])
    return done


def _nodes_by_host(hosts: set[str], clusters: list[str] | None = None) -> dict[str, Node]:
    nodes = Node.objects.filter(Q(k8s_name__in=hosts) | Q(hostname__in=hosts))
    if clusters is not None:  # what one Prometheus watches (a Kubernetes name is per cluster)
        nodes = nodes.filter(cluster_id__in=clusters)
    by_host: dict[str, Node] = {}
    for node in nodes:
        by_host[node.hostname] = node
        by_host[node.k8s_name] = node  # the Kubernetes name wins where the two collide
    return by_host


@transaction.atomic
def health_observations_record(
    *,
    observations: Iterable[dcgm.Observation],
    source: str = HealthEvent.Source.DCGM,
    seen_at: datetime | None = None,
    policy: RemediationPolicy | None = None,
    clusters: list[str] | None = None,
) -> RecordResult:
    """Open or update one health event per fault seen (on the nodes of `clusters`, or of any
    cluster); remediate the new and the worse ones."""
    seen_at = seen_at or timezone.now()
    policy = policy or RemediationPolicy.from_settings()
    found = _worst_per_fault(observations)
    by_host = _nodes_by_host({obs.host for obs in found}, clusters)
    nodes = {node.pk for node in by_host.values()}
    gpus = {(g.node_id, g.index): g for g in GPU.objects.filter(node_id__in=nodes)}
    taken_uuids = set(
        GPU.objects.filter(uuid__in=[o.gpu_uuid for o in found if o.gpu_uuid]).values_list(
            "uuid", flat=True
        )
    )
    open_events = {
        (e.node_id, e.kind, e.subject): e
        for e in HealthEvent.objects.select_for_update().filter(
            node_id__in=nodes, resolved_at__isnull=True
        )
    }
    result, to_remediate = RecordResult(), []
    for obs in found:
        node = by_host.get(obs.host)
        if node is None:
            result.unknown_hosts.append(obs.host)
            continue
        gpu = gpus.get((node.pk, obs.gpu_index))
        if gpu is not None and obs.gpu_uuid and not gpu.uuid and obs.gpu_uuid not in taken_uuids:
            gpu.uuid = obs.gpu_uuid  # the cluster counts GPUs; DCGM names them
            gpu.save(update_fields=["uuid"])
            taken_uuids.add(obs.gpu_uuid)
        event = open_events.get((node.pk, obs.kind, obs.subject))
        if event is None:
            event = HealthEvent.objects.create(
                node=node, gpu=gpu, kind=obs.kind, subject=obs.subject, severity=obs.severity,
                source=source, value=obs.value, detail=obs.detail, opened_at=seen_at,
                last_seen_at=seen_at,
            )
            open_events[(node.pk, obs.kind, obs.subject)] = event
            result.opened.append(event.pk)
            audit(actor=None, action="health_event.open", obj=node,
                  changes={"event": event.pk, "kind": obs.kind, "subject": obs.subject,
                           "severity": obs.severity, "detail": obs.detail})
            to_remediate.append(event)
        else:
            escalated = SEVERITY_RANK[obs.severity] > SEVERITY_RANK[event.severity]
            event.last_seen_at, event.value, event.detail = seen_at, obs.value, obs.detail
            if escalated:
                event.severity = obs.severity
                to_remediate.append(event)
            event.save(update_fields=["last_seen_at", "value", "detail", "severity"])
            result.updated += 1
        worse = GPU_HEALTH_FOR.get(Severity(obs.severity))
        if gpu is not None and worse and (
            gpu.health == GPU.Health.HEALTHY or worse == GPU.Health.FAILED
        ) and gpu.health != worse:
            gpu.health = worse
            gpu.save(update_fields=["health"])
    if source == HealthEvent.Source.DCGM:  # the cluster handles its own NotReady nodes
        for event in to_remediate:
            done = _remediate(event, policy)
            if done != HealthEvent.Remediation.NONE:
                result.remediated[event.pk] = done
    return result


@transaction.atomic
def node_readiness_record(*, node: Node, ready: bool | None, message: str = "") -> None:
    """Open a `node-not-ready` event while Kubernetes reports the node NotReady; close it after."""
    if ready is None:
        return
    open_event = HealthEvent.objects.filter(
        node=node, kind=HealthEvent.Kind.NOT_READY, resolved_at__isnull=True
    ).first()
    now = timezone.now()
    if not ready and open_event is None:
        HealthEvent.objects.create(
            node=node, kind=HealthEvent.Kind.NOT_READY, severity=Severity.WARNING,
            source=HealthEvent.Source.KUBERNETES, detail=message[:300] or "Ready=False",
        )
    elif not ready:
        HealthEvent.objects.filter(pk=open_event.pk).update(last_seen_at=now)
    elif open_event is not None:
        HealthEvent.objects.filter(pk=open_event.pk).update(
            resolved_at=now, resolution="Kubernetes reports the node Ready again"
        )


@transaction.atomic
def health_event_resolve(*, event_id: int, actor, note: str) -> HealthEvent:
    event = HealthEvent.objects.select_for_update().get(pk=event_id)
    if event.resolved_at is None:
        event.resolved_at, event.resolved_by = timezone.now(), actor
        event.resolution = note[:300]
        event.save(update_fields=["resolved_at", "resolved_by", "resolution"])
        audit(actor=actor, action="health_event.resolve", obj=event.node,
              changes={"event": event.pk, "note": note[:200]})
    return event


def _counters_record(values: dict[str, list[dcgm.Sample]],
                     clusters: list[str] | None = None) -> int:
    """Write the latest ECC counts and retired pages onto the GPUs DCGM reports (those of the
    nodes of `clusters`, or of any cluster)."""
    updates: dict[str, dict[str, int]] = {}
    for field_name, samples in values.items():
        for sample in samples:
            uuid = sample.labels.get("UUID")
            if uuid:
                updates.setdefault(uuid, {})[field_name] = max(0, int(sample.value))
    if not updates:
        return 0
    changed = []
    gpus = GPU.objects.filter(uuid__in=list(updates))
    if clusters is not None:
        gpus = gpus.filter(node__cluster_id__in=clusters)
    for gpu in gpus:
        new = {k: v for k, v in updates[gpu.uuid].items() if getattr(gpu, k) != v}
        for key, value in new.items():
            setattr(gpu, key, value)
        if new:
            changed.append(gpu)
    GPU.objects.bulk_update(changed, list(dcgm.COUNTERS), batch_size=500)
    return len(changed)


def prometheus_watching() -> dict[str, list[str]]:
    """Each Prometheus the fleet's health is read from, and the clusters in service it
    watches: a cluster's own (`prometheus_url`), else the fleet's (PROMETHEUS_URL). One
    query."""
    watching: dict[str, list[str]] = {}
    clusters = Cluster.objects.in_service().order_by("slug")
    for slug, url in clusters.values_list("slug", "prometheus_url"):
        if url or settings.PROMETHEUS_URL:
            watching.setdefault(url or settings.PROMETHEUS_URL, []).append(slug)
    return watching


def health_ingest(*, client: PrometheusClient | None = None) -> InventoryRun | None:
    """Query DCGM signals from each Prometheus of the fleet and record them, one run each,
    which says what it found or why it failed. A Prometheus that fails keeps no other's
    findings from being recorded; its failure is re-raised at the end (the task retries).
    With `client`, that one Prometheus is read for every cluster. Returns the last run."""
    if client is not None:
        return _ingest(client, clusters=None)
    runs: list[InventoryRun] = []
    failed: PrometheusError | None = None
    for url, clusters in prometheus_watching().items():
        client = PrometheusClient(base_url=url, timeout=settings.PROMETHEUS_TIMEOUT)
        try:
            runs.append(_ingest(client, clusters=clusters))
        except PrometheusError as exc:
            failed = failed or exc
    if failed is not None:
        raise failed
    return runs[-1] if runs else None


def _ingest(client: PrometheusClient, *, clusters: list[str] | None) -> InventoryRun:
    run = InventoryRun.objects.create(
        kind=InventoryRun.Kind.HEALTH_INGEST,
        cluster_id=clusters[0] if clusters and len(clusters) == 1 else None,
    )
    policy = dcgm_policy()
    w = dcgm.window(policy)
    try:
        found = [
            obs
            for signal in dcgm.SIGNALS
            for obs in dcgm.observations(signal, client.query(signal.query.format(w=w)), policy)
        ]
        counters = {name: client.query(q.format(w=w)) for name, q in dcgm.COUNTERS.items()}
    except PrometheusError as exc:
        InventoryRun.objects.filter(pk=run.pk).update(
            finished_at=timezone.now(), ok=False, error=str(exc)[:2000]
        )
        raise
    finally:
        client.close()
    with transaction.atomic():
        result = health_observations_record(observations=found, clusters=clusters)
        gpus_updated = _counters_record(counters, clusters)
        run.finished_at, run.ok = timezone.now(), True
        run.summary = {
            "clusters": clusters or "all",
            "findings": len(found),
            "opened": len(result.opened),
            "updated": result.updated,
            "remediated": {str(k): v for k, v in result.remediated.items()},
            "unknown_hosts": sorted(set(result.unknown_hosts))[:50],
            "gpu_counters_updated": gpus_updated,
        }
        run.save(update_fields=["finished_at", "ok", "summary"])
    return run


def inventory_runs_prune(*, keep_days: int = 14) -> int:
    deleted, _ = InventoryRun.objects.filter(
        started_at__lt=timezone.now() - timedelta(days=keep_days)
    ).delete()
    return deleted
