"""Nodes without GPUs (CPU workers) have nothing to charge in-use GPUs to: the GPU capacity
skips them (in Python since the first-GPU subquery runs once per node)."""

import pytest

from inventory.selectors.capacity import SHARED_POOL, gpu_capacity_by_pool
from tests.factories import GPUFactory, NodeFactory

pytestmark = pytest.mark.django_db


def test_in_use_on_a_node_without_gpus_is_not_counted(django_assert_num_queries):
    gpu_node = NodeFactory(gpus_in_use=1, mig_in_use={})
    GPUFactory(node=gpu_node, index=0, model="nvidia-h100-80gb")
    NodeFactory(gpus_in_use=3, mig_in_use={"1g.10gb": 2})  # no GPUs: a stale sync count
    NodeFactory(gpu_sharing="hami", hami_in_use={"memory_mib": 1024, "cores": 10})

    with django_assert_num_queries(2):
        pools = gpu_capacity_by_pool()

    shared = pools[SHARED_POOL]
    assert shared["gpu:nvidia-h100-80gb"].installed == 1
    assert shared["gpu:nvidia-h100-80gb"].in_use == 1
    assert set(shared) == {"gpu:nvidia-h100-80gb"}
