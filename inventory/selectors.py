"""Reads about the fleet: aggregate queries, a fixed number of them whatever the fleet's size."""

from dataclasses import dataclass

from django.db.models import Count, Q

from . import resource_classes
from .models import GPU, Node, NodeState


@dataclass(frozen=True)
class ModelCapacity:
    model: str
    label: str
    installed: int
    healthy: int


def fleet_capacity_by_model() -> list[ModelCapacity]:
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


def fleet_nodes_by_state() -> list[tuple[str, str, int]]:
    counts = dict(Node.objects.values_list("state").annotate(n=Count("id")).order_by())
    return [(state.value, state.label, counts.get(state.value, 0)) for state in NodeState]


def fleet_totals() -> dict[str, int]:
    return {
        **Node.objects.aggregate(nodes=Count("id"), sites=Count("rack__site", distinct=True)),
        "gpus": GPU.objects.count(),
    }
