"""The fleet overview's GPU summaries come from one scan of the GPUs
(`fleet_gpu_counts_by_model`); they must say what a query per summary says."""

import pytest
from django.db.models import Count, Q

from inventory.models import GPU, GpuSharing, NodeState
from inventory.selectors.fleet import (
    fleet_capacity_by_model,
    fleet_gpu_counts_by_model,
    fleet_gpu_sharing_by_model,
    fleet_health_summary,
    fleet_totals,
)
from tests.factories import GPUFactory, NodeFactory, hami_gpu_node

pytestmark = pytest.mark.django_db


@pytest.fixture
def mixed_fleet():
    whole = NodeFactory()
    for index in range(4):
        GPUFactory(
            node=whole,
            index=index,
            health=[GPU.Health.HEALTHY, GPU.Health.DEGRADED, GPU.Health.FAILED][index % 3],
            mig_layout=["1g.10gb"] * 7 if index == 0 else [],
        )
    hami_gpu_node(reserved_for="acme")
    hami_gpu_node(model="nvidia-h100-80gb", gpus=2)
    # A retired node's GPUs count in the fleet's totals only; a model only there is no row.
    retired = NodeFactory(state=NodeState.RETIRED)
    GPUFactory(node=retired, index=0, health=GPU.Health.FAILED)
    GPUFactory(node=retired, index=1, model="nvidia-a100-80gb")


def test_summaries_from_one_scan_match_a_query_each(mixed_fleet, django_assert_num_queries):
    with django_assert_num_queries(1):
        counts = fleet_gpu_counts_by_model()
    with django_assert_num_queries(0):
        capacity = fleet_capacity_by_model(counts)
        sharing = fleet_gpu_sharing_by_model(counts)
    assert capacity == fleet_capacity_by_model()
    assert sharing == fleet_gpu_sharing_by_model()
    assert fleet_health_summary(counts) == fleet_health_summary()
    assert fleet_totals(counts) == fleet_totals()

    live = GPU.objects.exclude(node__state=NodeState.RETIRED)
    expected = {
        row["model"]: (row["n"], row["healthy"])
        for row in live.values("model").annotate(
            n=Count("id"), healthy=Count("id", filter=Q(health=GPU.Health.HEALTHY))
        )
    }
    assert {row.model: (row.installed, row.healthy) for row in capacity} == expected
    assert "nvidia-a100-80gb" not in {row.model for row in sharing}
    by_model = {row.model: row for row in sharing}
    assert (by_model["nvidia-l40s"].hami, by_model["nvidia-l40s"].hami_reserved) == (8, 8)
    h100 = by_model["nvidia-h100-80gb"]
    assert (h100.whole, h100.mig, h100.hami, h100.hami_reserved) == (3, 1, 2, 0)
    assert live.filter(node__gpu_sharing=GpuSharing.HAMI).count() == 10
    health = fleet_health_summary(counts)
    assert (health.gpus_degraded, health.gpus_failed) == (1, 1)
    assert fleet_totals(counts)["gpus"] == GPU.objects.count() == 16
