"""Nodes for the list, the detail page and the rack view: prefetched, fixed query counts."""

from dataclasses import dataclass
from datetime import datetime

from django.db import models
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from core.choices import ColoredChoices, colored
from core.models import AuditEvent

from .. import resource_classes
from ..models import (
    GPU,
    NIC,
    Cluster,
    HealthEvent,
    Node,
    NodeState,
    NodeValidation,
    Rack,
    Site,
)
from ..models.health import Severity


@colored({"healthy": "success", "degraded": "warning", "critical": "danger"})
class NodeHealth(ColoredChoices):
    HEALTHY = "healthy", "Healthy"
    DEGRADED = "degraded", "Degraded"
    CRITICAL = "critical", "Critical"


def _open_events() -> QuerySet[HealthEvent]:
    return HealthEvent.objects.filter(node=OuterRef("pk"), resolved_at__isnull=True)


def _gpus() -> QuerySet[GPU]:
    return GPU.objects.filter(node=OuterRef("pk"))


def _count(rows: QuerySet) -> Coalesce:
    counted = rows.order_by().values("node").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=models.IntegerField()), 0)


def node_health() -> Case:
    """The health rule, the one definition (the list, the detail page, the API and the health
    filter read it): critical with an open critical event or a failed GPU, degraded with an
    open warning or a degraded GPU, healthy otherwise."""
    def open_event(severity: str) -> Q:
        return Q(Exists(_open_events().filter(severity=severity)))

    def gpu_with(health: str) -> Q:
        return Q(Exists(_gpus().filter(health=health)))

    return Case(
        When(open_event(Severity.CRITICAL) | gpu_with(GPU.Health.FAILED),
             then=Value(NodeHealth.CRITICAL)),
        When(open_event(Severity.WARNING) | gpu_with(GPU.Health.DEGRADED),
             then=Value(NodeHealth.DEGRADED)),
        default=Value(NodeHealth.HEALTHY),
        output_field=models.CharField(),
    )


def with_node_facts(nodes: QuerySet[Node]) -> QuerySet[Node]:
    """`nodes`, each with its GPU count and model (its first GPU's), its open health events and
    its health (`node_health`)."""
    return nodes.annotate(
        gpu_count=_count(_gpus()),
        gpu_model=Subquery(_gpus().order_by("index").values("model")[:1]),
        open_events=_count(_open_events()),
        health=node_health(),
    )


def nodes_for_list() -> QuerySet[Node]:
    """Every node with its site, GPU model and count, open events and health: one query."""
    return with_node_facts(Node.objects.select_related("rack__site")).order_by("hostname")


# What a row of the node list shows: the rest of a node (its JSON documents from the cluster
# sync above all) is read and decoded only on its own page.
NODE_ROW_FIELDS = (
    "hostname", "k8s_name", "cluster_id", "rack_id", "position",
    "state", "gpu_sharing", "reserved_for", "cpu_cores", "memory_gib",
)


def node_rows_for_list() -> QuerySet[Node]:
    """`nodes_for_list()` with only the columns the list's rows show; its rack's and site's
    names as `rack_name` and `site_slug` (a model instance of each per row cost more than
    the row's markup)."""
    return (
        nodes_for_list()
        .select_related(None)
        .only(*NODE_ROW_FIELDS)
        .annotate(rack_name=F("rack__name"), site_slug=F("rack__site__slug"))
    )


def node_row_values(node: Node) -> dict:
    """What one row of the list shows, as plain values (counts grouped, the GPU model by its
    name): a template reads a key of a dict at once, where it first tries a model instance as
    a dict and falls back to its attribute."""
    return {
        "pk": node.pk, "hostname": node.hostname, "k8s_name": node.k8s_name,
        "cluster": node.cluster_id,
        "rack_id": node.rack_id, "rack_name": node.rack_name, "site_slug": node.site_slug,
        "position": node.position, "gpu_count": f"{node.gpu_count:,}" if node.gpu_count else "",
        "gpu_label": resource_classes.gpu_label(node.gpu_model),
        "gpu_sharing": node.gpu_sharing, "gpu_sharing_color": node.gpu_sharing_color,
        "get_gpu_sharing_display": node.get_gpu_sharing_display(),
        "state": node.state, "state_color": node.state_color,
        "get_state_display": node.get_state_display(), "health": node.health,
        "open_events": f"{node.open_events:,}" if node.open_events else "",
        "reserved_for": node.reserved_for,
        "cpu_cores": f"{node.cpu_cores:,}", "memory_gib": f"{node.memory_gib:,}",
    }


def reserved_tenants_in_use() -> list[str]:
    """Tenant slugs that hold reserved nodes (for the list's filter)."""
    return list(
        Node.objects.exclude(reserved_for="")
        .order_by("reserved_for")
        .values_list("reserved_for", flat=True)
        .distinct()
    )


def clusters_holding_nodes() -> list[tuple[str, str]]:
    """(slug, slug) of every cluster some node belongs to (the node list's cluster filter:
    drawn from the nodes alone, so cached with them)."""
    slugs = Node.objects.order_by("cluster_id").values_list("cluster_id", flat=True).distinct()
    return [(slug, slug) for slug in slugs]


def cluster_choices() -> list[tuple[str, str]]:
    """(slug, name) of every cluster in service, by name (the lists' cluster filters)."""
    return list(Cluster.objects.in_service().order_by("name").values_list("slug", "name"))


def site_choices() -> list[tuple[str, str]]:
    """(slug, name) of every site, by name (the list's site filter)."""
    return list(Site.objects.order_by("name").values_list("slug", "name"))


def node_get_for_detail(*, node_id: int) -> Node:
    """A node with its GPUs, NICs, validations and health events, or 404; with what
    `nodes_for_list()` annotates (GPU count and model, open events, health)."""
    return get_object_or_404(
        nodes_for_list().prefetch_related(
            Prefetch("gpus", queryset=GPU.objects.order_by("index")),
            Prefetch("nics", queryset=NIC.objects.order_by("rail", "name")),
            Prefetch("validations", queryset=NodeValidation.objects.select_related("recorded_by")),
            Prefetch(
                "health_events",
                queryset=HealthEvent.objects.select_related("gpu", "resolved_by").order_by(
                    "-opened_at", "-id"
                ),
            ),
        ),
        pk=node_id,
    )


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime
    title: str
    detail: str
    color: str
    icon: str


def node_timeline(*, node: Node, limit: int = 50) -> list[TimelineEntry]:
    """Lifecycle moves (from the audit trail) and health events, newest first."""
    entries = []
    for event in node.health_events.all():
        entries.append(
            TimelineEntry(
                at=event.opened_at,
                title=f"{event.get_kind_display()} on {event.subject}",
                detail=event.detail,
                color=event.severity_color,
                icon="exclamation-triangle",
            )
        )
        if event.resolved_at:
            entries.append(
                TimelineEntry(
                    at=event.resolved_at,
                    title=f"Resolved: {event.get_kind_display()} on {event.subject}",
                    detail=event.resolution,
                    color="success",
                    icon="check-circle",
                )
            )
    trail = AuditEvent.objects.filter(
        object_type=Node._meta.label_lower, object_id=str(node.pk)
    ).exclude(action__startswith="health_event.")[:limit]
    for item in trail:
        changes = item.changes or {}
        if item.action == "node.transition":
            title = f"{changes.get('from')} → {changes.get('to')}"
            detail = changes.get("reason", "")
        else:
            title = item.action.removeprefix("node.").replace("_", " ").capitalize()
            detail = ", ".join(f"{k}: {v}" for k, v in changes.items() if v not in ("", None))
        entries.append(
            TimelineEntry(
                at=item.created_at,
                title=f"{title} · {item.actor_repr or 'system'}",
                detail=str(detail)[:300],
                color="secondary",
                icon="arrow-right-circle",
            )
        )
    entries.sort(key=lambda entry: entry.at, reverse=True)
    return entries[:limit]


@dataclass(frozen=True)
class RackSlot:
    unit: int  # the top unit of the slot
    span: int
    node: Node | None

    @property
    def height(self) -> str:
        """CSS height of the slot in the elevation drawing (one unit is 1.1rem)."""
        return f"{self.span * 1.1 + (self.span - 1) * 0.25:.2f}rem"


def rack_get_with_elevation(*, rack_id: int) -> tuple[Rack, list[RackSlot]]:
    """A rack and its units top-down: one slot per node (spanning its height) or empty unit."""
    rack = get_object_or_404(Rack.objects.select_related("site"), pk=rack_id)
    nodes = list(nodes_for_list().filter(rack=rack, position__isnull=False).order_by("-position"))
    by_top = {node.top_unit: node for node in nodes}
    slots, unit = [], rack.units
    while unit >= 1:
        node = by_top.get(unit)
        if node is not None:
            span = min(node.height_units, unit)
            slots.append(RackSlot(unit=unit, span=span, node=node))
            unit -= span
        else:
            slots.append(RackSlot(unit=unit, span=1, node=None))
            unit -= 1
    return rack, slots


def racks_for_site_overview() -> QuerySet[Rack]:
    return Rack.objects.select_related("site").annotate(
        node_count=Count("nodes", distinct=True),
        available=Count("nodes", filter=Q(nodes__state=NodeState.AVAILABLE), distinct=True),
    ).order_by("site__name", "name")


def node_open_critical_event_count(*, node: Node) -> int:
    """Open critical health events of a node: returning it to service closes them unseen."""
    return HealthEvent.objects.filter(
        node=node, resolved_at__isnull=True, severity=Severity.CRITICAL
    ).count()
