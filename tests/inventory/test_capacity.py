"""Capacity per resource class: installed, healthy, reserved, granted, in use."""

from decimal import Decimal

import pytest

from inventory.models import GPU, NodeState
from tenants.models import Tenant
from tenants.quota.capacity import capacity_by_resource_class, fleet_capacity_by_resource_class
from tests.factories import GPUFactory, NodeFactory, QuotaFactory, TenantFactory

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
    assert (whole.installed, whole.healthy, whole.reserved, whole.granted, whole.in_use) == (
        6 + 8 + 8 + 8, 6 + 8 + 7, 8, 16, 2
    )
    mig = rows["mig:nvidia-a100-80gb:1g.10gb"]
    assert (mig.installed, mig.healthy, mig.granted, mig.in_use) == (7, 7, 7, 3)
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
    with django_assert_num_queries(4):
        small = capacity_by_resource_class()
    build_fleet(300, prefix="more")
    with django_assert_num_queries(4):
        large = capacity_by_resource_class()
    assert sum(r.installed for r in large) > sum(r.installed for r in small)
