"""The fleet overview: capacity by model, how GPUs are shared, nodes by state, health summary,
last job runs."""

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from .. import resource_classes
from ..models import GPU, GpuSharing, HealthEvent, InventoryRun, Node, NodeState
from ..models.health import Severity


@dataclass(frozen=True)
class ModelCapacity:
    model: str
    label: str
    installed: int
    healthy: int


def fleet_capacity_by_model() -> list[ModelCapacity]:
    """Physical GPUs by model on nodes that are not retired, and how many report healthy."""
    rows = (
        GPU.objects.exclude(node__state=NodeState.RETIRED)
        .values("model")
        .annotate(
            installed=Count("id"),
            healthy=Count("id", filter=Q(health=GPU.Health.HEALTHY)),
        )
        .order_by("model")
    )
    return [
        ModelCapacity(
            model=row["model"],
            label=getattr(
                resource_classes.GPU_MODELS.get(row["model"]), "display_name", row["model"]
            ),
            installed=row["installed"],
            healthy=row["healthy"],
        )
        for row in rows
    ]


@dataclass(frozen=True)
class ModelSharing:
    """How the GPUs of one model are handed out: whole, partitioned by MIG, shared by HAMi."""

    model: str
    label: str
    whole: int
    mig: int
    hami: int
    # HAMi-shared GPUs on nodes reserved for a dedicated tenant: that tenant gets no shares and
    # the reservation's taint keeps everyone else off, so nobody can use them.
    hami_reserved: int

    @property
    def total(self) -> int:
        return self.whole + self.mig + self.hami


def fleet_gpu_sharing_by_model() -> list[ModelSharing]:
    """Physical GPUs by model on nodes that are not retired: whole (nothing partitions them),
    MIG (a MIG layout is configured) or HAMi (their node's GPUs are HAMi's). One query."""
    hami = Q(node__gpu_sharing=GpuSharing.HAMI)
    rows = (
        GPU.objects.exclude(node__state=NodeState.RETIRED)
        .values("model")
        .annotate(
            total=Count("id"),
            hami=Count("id", filter=hami),
            mig=Count("id", filter=~hami & ~Q(mig_layout=[])),
            hami_reserved=Count("id", filter=hami & ~Q(node__reserved_for="")),
        )
        .order_by("model")
    )
    order = {key: i for i, key in enumerate(resource_classes.GPU_MODELS)}
    found = [
        ModelSharing(
            model=row["model"],
            label=getattr(
                resource_classes.GPU_MODELS.get(row["model"]), "display_name", row["model"]
            ),
            whole=row["total"] - row["hami"] - row["mig"],
            mig=row["mig"],
            hami=row["hami"],
            hami_reserved=row["hami_reserved"],
        )
        for row in rows
    ]
    return sorted(found, key=lambda r: (order.get(r.model, len(order)), r.model))


def fleet_nodes_by_state() -> list[tuple[str, str, int, str]]:
    """(state, label, count, colour) for every lifecycle state, in lifecycle order."""
    counts = dict(Node.objects.values_list("state").annotate(n=Count("id")).order_by())
    return [
        (state.value, state.label, counts.get(state.value, 0), NodeState.color(state))
        for state in NodeState
    ]


def fleet_totals() -> dict[str, int]:
    return {
        **Node.objects.aggregate(nodes=Count("id"), sites=Count("rack__site", distinct=True)),
        "gpus": GPU.objects.count(),
    }


@dataclass(frozen=True)
class HealthSummary:
    open_critical: int
    open_warning: int
    open_info: int
    gpus_degraded: int
    gpus_failed: int
    nodes_affected: int

    @property
    def open_total(self) -> int:
        return self.open_critical + self.open_warning + self.open_info


def fleet_health_summary() -> HealthSummary:
    events = HealthEvent.objects.filter(resolved_at__isnull=True).aggregate(
        critical=Count("id", filter=Q(severity=Severity.CRITICAL)),
        warning=Count("id", filter=Q(severity=Severity.WARNING)),
        info=Count("id", filter=Q(severity=Severity.INFO)),
        nodes=Count("node", distinct=True),
    )
    gpus = GPU.objects.exclude(node__state=NodeState.RETIRED).aggregate(
        degraded=Count("id", filter=Q(health=GPU.Health.DEGRADED)),
        failed=Count("id", filter=Q(health=GPU.Health.FAILED)),
    )
    return HealthSummary(
        open_critical=events["critical"],
        open_warning=events["warning"],
        open_info=events["info"],
        gpus_degraded=gpus["degraded"],
        gpus_failed=gpus["failed"],
        nodes_affected=events["nodes"],
    )


def health_events_open(*, limit: int = 10) -> QuerySet[HealthEvent]:
    return (
        HealthEvent.objects.filter(resolved_at__isnull=True)
        .select_related("node", "gpu")
        .order_by("-opened_at", "-id")[:limit]
    )


def inventory_last_runs() -> dict[str, InventoryRun | None]:
    """The latest run of each periodic job (one query per kind: two)."""
    return {
        kind: InventoryRun.objects.filter(kind=kind).order_by("-started_at", "-id").first()
        for kind in (InventoryRun.Kind.CLUSTER_SYNC, InventoryRun.Kind.HEALTH_INGEST)
    }
