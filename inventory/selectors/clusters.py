"""The fleet by cluster and by site: each cluster's capacity (GPU classes installed, healthy, in
use and free), health (nodes by state, open health events) and reachability.

Split in two for the overview's cache: the counts (`cluster_counts`, four queries whatever the
number of clusters, nodes or GPUs) change only with the inventory's tables and are cached under
their versions; the clusters themselves (`fleet_by_site`, one query) are read on every view, as
their reachability is the portal's latest observation.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Q

from .. import resource_classes
from ..models import Cluster, HealthEvent, Node, NodeState
from ..models.health import Severity
from .capacity import gpu_capacity_by_cluster


@dataclass(frozen=True)
class ClassCounts:
    """One GPU class (whole GPUs, MIG instances, HAMi shares) on one cluster, all pools."""

    resource: str
    label: str
    installed: int
    healthy: int
    in_use: int  # what the last cluster sync saw pods ask for

    @property
    def free(self) -> int:
        return max(0, self.healthy - self.in_use)

    @property
    def percent_in_use(self) -> int:
        return min(100, round(100 * self.in_use / self.healthy)) if self.healthy else 0


@dataclass(frozen=True)
class ClusterCounts:
    """What the inventory holds of one cluster."""

    nodes: int = 0
    states: tuple[tuple[str, str, int, str], ...] = ()  # (state, label, count, colour), nonzero
    open_critical: int = 0
    open_warning: int = 0
    nodes_affected: int = 0
    gpus: tuple[ClassCounts, ...] = ()


def cluster_counts() -> dict[str, ClusterCounts]:
    """Per cluster slug: its nodes by lifecycle state, its open health events, and its GPU
    classes' capacity. Four queries; plain values (cacheable)."""
    states: dict[str, dict[str, int]] = defaultdict(dict)
    for cluster, state, count in (
        Node.objects.values_list("cluster_id", "state").annotate(n=Count("id")).order_by()
    ):
        states[cluster][state] = count
    events = {
        row["node__cluster_id"]: row
        for row in HealthEvent.objects.filter(resolved_at__isnull=True)
        .values("node__cluster_id")
        .annotate(
            critical=Count("id", filter=Q(severity=Severity.CRITICAL)),
            warning=Count("id", filter=Q(severity=Severity.WARNING)),
            nodes=Count("node", distinct=True),
        )
        .order_by()
    }
    order = resource_classes.key_order()
    gpus: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for cluster, pools in gpu_capacity_by_cluster().items():
        for rows in pools.values():
            for key, counts in rows.items():
                total = gpus[cluster][key]
                total[0] += counts.installed
                total[1] += counts.healthy
                total[2] += counts.in_use
    counts = {}
    for cluster in set(states) | set(events) | set(gpus):
        by_state = states.get(cluster, {})
        event = events.get(cluster, {})
        counts[cluster] = ClusterCounts(
            nodes=sum(by_state.values()),
            states=tuple((s.value, s.label, by_state[s.value], NodeState.color(s))
                         for s in NodeState if by_state.get(s.value)),
            open_critical=event.get("critical", 0),
            open_warning=event.get("warning", 0),
            nodes_affected=event.get("nodes", 0),
            gpus=tuple(
                ClassCounts(key, resource_classes.parse(key).label, *totals)
                for key, totals in sorted(gpus.get(cluster, {}).items(),
                                          key=lambda item: (order.get(item[0], len(order)),
                                                            item[0]))
                if totals[0]
            ),
        )
    return counts


@dataclass
class ClusterView:
    cluster: Cluster
    counts: ClusterCounts


@dataclass
class SiteView:
    name: str  # "" for clusters in no site
    slug: str
    clusters: list[ClusterView] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        return sum(c.installed for view in self.clusters for c in view.counts.gpus
                   if c.resource.startswith("gpu:"))

    @property
    def nodes(self) -> int:
        return sum(view.counts.nodes for view in self.clusters)


def fleet_by_site(counts: dict[str, ClusterCounts]) -> list[SiteView]:
    """Every cluster (retired ones last in their site) with its `counts`, grouped by site
    (sites by name, clusters in no site last). One query."""
    sites: dict[str, SiteView] = {}
    clusters = Cluster.objects.select_related("site").order_by("site__name", "name")
    for cluster in clusters:
        key = cluster.site.slug if cluster.site else ""
        if key not in sites:
            sites[key] = SiteView(name=cluster.site.name if cluster.site else "", slug=key)
        sites[key].clusters.append(ClusterView(cluster, counts.get(cluster.slug,
                                                                   ClusterCounts())))
    for site in sites.values():
        site.clusters.sort(key=lambda v: v.cluster.state == Cluster.State.RETIRED)
    return sorted(sites.values(), key=lambda s: (not s.slug, s.name))
