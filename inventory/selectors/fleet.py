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


@dataclass(frozen=True)
class GpuModelCounts:
    """Every count the overview shows of one GPU model, from one scan of the GPUs. All but
    `total` are of GPUs on nodes that are not retired."""

    model: str
    total: int  # every GPU of the model, retired nodes included (the fleet's totals)
    installed: int
    healthy: int
    degraded: int
    failed: int
    hami: int
    mig: int
    hami_reserved: int


def fleet_gpu_counts_by_model() -> list[GpuModelCounts]:
    """One query over the GPUs for what the capacity, sharing, health and totals summaries
    need: at 16,000 GPUs each scan costs ~10 ms, and those four used to scan them each."""
    live = ~Q(node__state=NodeState.RETIRED)
    hami = Q(node__gpu_sharing=GpuSharing.HAMI)
    rows = (
        GPU.objects.values("model")
        .annotate(
            total=Count("id"),
            installed=Count("id", filter=live),
            healthy=Count("id", filter=live & Q(health=GPU.Health.HEALTHY)),
            degraded=Count("id", filter=live & Q(health=GPU.Health.DEGRADED)),
            failed=Count("id", filter=live & Q(health=GPU.Health.FAILED)),
            hami=Count("id", filter=live & hami),
            mig=Count("id", filter=live & ~hami & ~Q(mig_layout=[])),
            hami_reserved=Count("id", filter=live & hami & ~Q(node__reserved_for="")),
        )
        .order_by("model")
    )
    return [GpuModelCounts(**row) for row in rows]


def _label(model: str) -> str:
    return getattr(resource_classes.GPU_MODELS.get(model), "display_name", model)


def fleet_capacity_by_model(
    counts: list[GpuModelCounts] | None = None,
) -> list[ModelCapacity]:
    """Physical GPUs by model on nodes that are not retired, and how many report healthy.
    `counts`: `fleet_gpu_counts_by_model()` when the caller has it already (no query)."""
    if counts is None:
        counts = fleet_gpu_counts_by_model()
    return [
        ModelCapacity(
            model=row.model,
            label=_label(row.model),
            installed=row.installed,
            healthy=row.healthy,
        )
        for row in counts
        if row.installed
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


def fleet_gpu_sharing_by_model(
    counts: list[GpuModelCounts] | None = None,
) -> list[ModelSharing]:
    """Physical GPUs by model on nodes that are not retired: whole (nothing partitions them),
    MIG (a MIG layout is configured) or HAMi (their node's GPUs are HAMi's). One query, none
    when `counts` (`fleet_gpu_counts_by_model()`) is given."""
    if counts is None:
        counts = fleet_gpu_counts_by_model()
    order = {key: i for i, key in enumerate(resource_classes.GPU_MODELS)}
    found = [
        ModelSharing(
            model=row.model,
            label=_label(row.model),
            whole=row.installed - row.hami - row.mig,
            mig=row.mig,
            hami=row.hami,
            hami_reserved=row.hami_reserved,
        )
        for row in counts
        if row.installed
    ]
    return sorted(found, key=lambda r: (order.get(r.model, len(order)), r.model))


def fleet_nodes_by_state() -> list[tuple[str, str, int, str]]:
    """(state, label, count, colour) for every lifecycle state, in lifecycle order."""
    counts = dict(Node.objects.values_list("state").annotate(n=Count("id")).order_by())
    return [
        (state.value, state.label, counts.get(state.value, 0), NodeState.color(state))
        for state in NodeState
    ]


def fleet_totals(counts: list[GpuModelCounts] | None = None) -> dict[str, int]:
    """Nodes, sites and GPUs (retired nodes' included); `counts` spares the GPU query."""
    return {
        **Node.objects.aggregate(nodes=Count("id"), sites=Count("rack__site", distinct=True)),
        "gpus": GPU.objects.count() if counts is None else sum(row.total for row in counts),
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


def fleet_health_summary(counts: list[GpuModelCounts] | None = None) -> HealthSummary:
    """Open health events by severity and GPUs degraded/failed on nodes not retired; `counts`
    (`fleet_gpu_counts_by_model()`) spares the GPU query."""
    events = HealthEvent.objects.filter(resolved_at__isnull=True).aggregate(
        critical=Count("id", filter=Q(severity=Severity.CRITICAL)),
        warning=Count("id", filter=Q(severity=Severity.WARNING)),
        info=Count("id", filter=Q(severity=Severity.INFO)),
        nodes=Count("node", distinct=True),
    )
    if counts is None:
        gpus = GPU.objects.exclude(node__state=NodeState.RETIRED).aggregate(
            degraded=Count("id", filter=Q(health=GPU.Health.DEGRADED)),
            failed=Count("id", filter=Q(health=GPU.Health.FAILED)),
        )
    else:
        gpus = {
            "degraded": sum(row.degraded for row in counts),
            "failed": sum(row.failed for row in counts),
        }
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
