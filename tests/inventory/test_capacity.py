"""Capacity per resource class: installed, healthy, reserved, granted, in use."""

import re
from decimal import Decimal

import pytest

from inventory.models import GPU, NodeState
from inventory.selectors.capacity import SHARED_POOL, gpu_capacity_by_pool, largest_node_by_class
from tenants.models import Tenant
from tenants.quota.capacity import (
    capacity_by_resource_class,
    fleet_capacity_by_resource_class,
    tenant_capacity_by_resource_class,
)
from tests.factories import GPUFactory, NodeFactory, QuotaFactory, TenantFactory, hami_gpu_node

from .fleets import build_fleet


def _a100_node(state=NodeState.AVAILABLE, reserved_for="", layouts=(), **fields):
    node = NodeFactory(state=state, reserved_for=reserved_for, cpu_cores=128, memory_gib=1024,
                       **fields)
    for index in range(8):
        layout = list(layouts[index]) if index < len(layouts) else []
        GPUFactory(node=node, index=index, model="nvidia-a100-80gb", mig_capable=True,
                   mig_layout=layout)
    return node


@pytest.mark.django_db
def test_capacity_counts_whole_gpus_and_mig_instances_once_each(tenant, other_tenant):
    _a100_node(layouts=[["1g.10gb"] * 7, ["3g.40gb", "3g.40gb"]],
               gpus_in_use=2, mig_in_use={"1g.10gb": 3})
    _a100_node(reserved_for="helix")
    broken = _a100_node(state=NodeState.MAINTENANCE)
    GPU.objects.filter(node=_a100_node(), index=5).update(health=GPU.Health.FAILED)
    _a100_node(state=NodeState.RETIRED)
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-a100-80gb", limit=12)
    QuotaFactory(tenant=other_tenant, resource="gpu:nvidia-a100-80gb", limit=4)
    QuotaFactory(tenant=tenant, resource="mig:nvidia-a100-80gb:1g.10gb", limit=7)
    suspended = TenantFactory(slug="gone", status=Tenant.Status.SUSPENDED)
    QuotaFactory(tenant=suspended, resource="gpu:nvidia-a100-80gb", limit=100)
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-h200", limit=8)

    rows = {row.resource: row for row in capacity_by_resource_class()}

    whole = rows["gpu:nvidia-a100-80gb"]
    assert (whole.installed, whole.healthy, whole.reserved, whole.granted) == (
        6 + 8 + 8 + 8, 6 + 8 + 7, 8, 16
    )
    # No workload holds any: in use is 0, and the pods the cluster reported are shown beside.
    assert (whole.in_use, whole.cluster_in_use, whole.cluster_differs) == (0, 2, True)
    mig = rows["mig:nvidia-a100-80gb:1g.10gb"]
    assert (mig.installed, mig.healthy, mig.granted, mig.cluster_in_use) == (7, 7, 7, 3)
    assert rows["mig:nvidia-a100-80gb:3g.40gb"].installed == 2
    h200 = rows["gpu:nvidia-h200"]  # granted but not installed: visible, so oversubscribed
    assert (h200.installed, h200.granted, h200.free()) == (0, 8, -8)
    assert rows["cpu"].installed == 4 * 128 and rows["cpu"].healthy == 3 * 128
    assert rows["cpu"].reserved == 128
    assert list(rows)[:3] == [  # in the vocabulary's order
        "gpu:nvidia-h200", "gpu:nvidia-a100-80gb", "mig:nvidia-a100-80gb:1g.10gb"
    ]
    assert broken.gpus.count() == 8


@pytest.mark.django_db
def test_the_map_for_quota_approval_covers_every_class_and_says_what_is_not_measured(tenant):
    _a100_node()
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-a100-80gb", limit=6)

    capacity = fleet_capacity_by_resource_class()

    a100 = capacity["gpu:nvidia-a100-80gb"]
    assert (a100.free(), a100.free(extra=4), a100.ratio(extra=2)) == (2, -2, Decimal("1.00"))
    assert capacity["storage-gib"].free() is None and capacity["count:vm"].ratio() is None
    assert capacity["gpu:nvidia-l40s"].installed == 0  # measured: there are none


@pytest.mark.django_db
def test_capacity_takes_the_same_queries_whatever_the_fleet_size(django_assert_num_queries):
    build_fleet(30)
    with django_assert_num_queries(5):
        small = capacity_by_resource_class()
    build_fleet(300, prefix="more")
    with django_assert_num_queries(5):
        large = capacity_by_resource_class()
    assert sum(r.installed for r in large) > sum(r.installed for r in small)


L40S_MEMORY, L40S_CORES = "hami:nvidia-l40s:memory-gib", "hami:nvidia-l40s:cores"


@pytest.mark.django_db
def test_hami_gpus_count_as_memory_and_compute_shares_never_as_whole_gpus(tenant):
    # 8 registered (GPU 5 unhealthy), in use by pods; 8 whole L40S next to them.
    hami_gpu_node(unhealthy=(5,), hami_in_use={"vgpus": 3, "memory_mib": 12288 + 3000,
                                               "cores": 50})
    hami_gpu_node(gpus=2, registered=False)  # labelled, the device plugin has not registered
    hami_gpu_node(gpus=4, state=NodeState.CORDONED)
    hami_gpu_node(gpus=2, state=NodeState.RETIRED)
    whole = NodeFactory(gpus_in_use=3)
    for index in range(8):
        GPUFactory(node=whole, index=index, model="nvidia-l40s", memory_gib=45)
    QuotaFactory(tenant=tenant, resource=L40S_MEMORY, limit=96)

    rows = {row.resource: row for row in capacity_by_resource_class()}

    memory, cores, gpus = rows[L40S_MEMORY], rows[L40S_CORES], rows["gpu:nvidia-l40s"]
    per_gpu = 46068 // 1024  # 44 GiB: whole GiB of what HAMi registered, never rounded up
    assert (memory.installed, memory.healthy, memory.granted, memory.cluster_in_use) == (
        8 * per_gpu + 2 * 45 + 4 * per_gpu, 7 * per_gpu, 96, 15  # 15,288 MiB: 15 GiB
    )
    assert (cores.installed, cores.healthy, cores.cluster_in_use) == (1400, 700, 50)
    assert (gpus.installed, gpus.healthy, gpus.cluster_in_use) == (8, 8, 3)  # only the whole
    assert memory.label == "NVIDIA L40S HAMi GPU memory (GiB)"
    order = list(rows)
    assert order.index("gpu:nvidia-l40s") < order.index(L40S_MEMORY) < order.index("cpu")


@pytest.mark.django_db
def test_hami_capacity_is_per_pool_and_the_largest_share_is_one_gpus(tenant, other_tenant):
    hami_gpu_node(memory_mib=46068)
    hami_gpu_node(gpus=2, memory_mib=92160)  # deviceMemoryScaling 2: what HAMi schedules
    hami_gpu_node(gpus=4, reserved_for="helix")
    mig = NodeFactory()
    GPUFactory(node=mig, index=0, model="nvidia-a100-80gb", mig_layout=["1g.10gb"] * 7)

    pools = gpu_capacity_by_pool()
    largest = largest_node_by_class(pool=SHARED_POOL)

    assert pools[SHARED_POOL][L40S_CORES].installed == 1000
    assert pools["helix"][L40S_CORES].reserved == 400
    assert largest[L40S_MEMORY] == 90 and largest[L40S_CORES] == 100  # one GPU, not a node
    assert largest["mig:nvidia-a100-80gb:1g.10gb"] == 7
    assert "gpu:nvidia-l40s" not in largest
    assert largest_node_by_class(pool="helix")[L40S_MEMORY] == 44
    other_tenant.isolation = Tenant.Isolation.DEDICATED
    other_tenant.slug = "helix"
    other_tenant.save()
    dedicated = tenant_capacity_by_resource_class(tenant=other_tenant)
    shared = tenant_capacity_by_resource_class(tenant=tenant)
    assert dedicated[L40S_CORES].installed == 400 and shared[L40S_CORES].installed == 1000


@pytest.mark.django_db
def test_gpus_are_counted_in_sql_so_the_rows_read_do_not_grow_with_the_fleet():
    """Two queries at any size, and the GPU query answers one row per pool, model and layout
    (HAMi-shared GPUs aside), not one per GPU: 16,000 GPUs stay a handful of rows."""
    from django.db import connection

    def rows_read() -> list[int]:
        read: list[int] = []

        def record(execute, sql, params, many, context):
            result = execute(sql, params, many, context)
            if re.search(r'FROM "inventory_gpu" (?!U\d)', sql):  # the GPUs', not a subquery
                read.append(context["cursor"].rowcount)
            return result

        with connection.execute_wrapper(record):
            gpu_capacity_by_pool()
        return read

    build_fleet(30, prefix="small")  # every model in the shared pool and in a reserved one
    few = rows_read()
    build_fleet(90, prefix="large")
    many = rows_read()
    assert len(few) == len(many) == 1
    assert many[0] == few[0] == 6  # 3 models in 2 pools (shared and reserved)


@pytest.mark.django_db
def test_in_use_is_summed_over_nodes_in_sql_per_pool_model_and_mig_use(
    django_assert_num_queries,
):
    # Three nodes with the same MIG use fall in one group; HAMi's MiB are summed per model
    # before rounding up to GiB; a retired node's use and a node without GPUs count nothing.
    for _ in range(3):
        _a100_node(layouts=[["1g.10gb"] * 7], gpus_in_use=1, mig_in_use={"1g.10gb": 2})
    _a100_node(reserved_for="helix", gpus_in_use=4)
    _a100_node(state=NodeState.RETIRED, gpus_in_use=5, mig_in_use={"1g.10gb": 1})
    NodeFactory(gpus_in_use=9)  # no GPUs: no model to charge
    hami_gpu_node(gpus=2, hami_in_use={"memory_mib": 600, "cores": 30})
    hami_gpu_node(gpus=2, hami_in_use={"memory_mib": 500, "cores": 20})
    hami_gpu_node(gpus=2, reserved_for="helix", hami_in_use={"memory_mib": 1, "cores": 5})
    hami_gpu_node(gpus=2)  # nothing in use

    with django_assert_num_queries(2):
        pools = gpu_capacity_by_pool()

    shared, helix = pools[SHARED_POOL], pools["helix"]
    assert shared["gpu:nvidia-a100-80gb"].in_use == 3
    assert shared["mig:nvidia-a100-80gb:1g.10gb"].in_use == 6
    assert helix["gpu:nvidia-a100-80gb"].in_use == 4
    assert shared[L40S_MEMORY].in_use == 2  # 1,100 MiB
    assert shared[L40S_CORES].in_use == 50
    assert (helix[L40S_MEMORY].in_use, helix[L40S_CORES].in_use) == (1, 5)
    assert shared[L40S_MEMORY].installed == 6 * (46068 // 1024)
