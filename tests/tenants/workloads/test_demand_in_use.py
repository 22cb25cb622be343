"""What tenants' workloads hold, summed per tenant and class: deleted
workloads left out, in one query however many tenants and workloads."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants.workloads.models import HOLDING, Workload, WorkloadStatus
from tenants.workloads.selectors import demand_in_use

pytestmark = pytest.mark.django_db

H100 = "gpu:nvidia-h100-80gb"


def _workload(tenant, name, status, demand):
    return Workload.objects.create(tenant=tenant, kind="vcluster", name=name, status=status,
                                   demand=demand)


def test_demand_in_use_sums_each_tenants_holding_workloads_by_class(tenant, other_tenant):
    _workload(tenant, "a", WorkloadStatus.READY, {H100: 2, "cpu": 8})
    _workload(tenant, "b", WorkloadStatus.PROVISIONING, {H100: 1, "memory-gib": 64})
    _workload(tenant, "c", WorkloadStatus.FAILED, {"cpu": 4})
    # The same shape twice: grouped by their document, counted twice.
    _workload(tenant, "d", WorkloadStatus.READY, {H100: 1, "cpu": 2})
    _workload(tenant, "e", WorkloadStatus.DELETING, {H100: 1, "cpu": 2})
    _workload(tenant, "gone", WorkloadStatus.DELETED, {H100: 8})  # holds nothing any more
    _workload(tenant, "empty", WorkloadStatus.PENDING, {})
    _workload(other_tenant, "x", WorkloadStatus.DEGRADED, {H100: 3})

    with CaptureQueriesContext(connection) as queries:
        held = demand_in_use(tenant_ids=[tenant.pk, other_tenant.pk])

    assert held == {tenant.pk: {H100: 5, "cpu": 16, "memory-gib": 64},
                    other_tenant.pk: {H100: 3}}
    assert len(queries) == 1
    # The sum is the same as adding up each holding workload's demand.
    expected: dict[str, int] = {}
    for demand in Workload.objects.filter(tenant=tenant, status__in=HOLDING).values_list(
            "demand", flat=True):
        for resource, amount in demand.items():
            expected[resource] = expected.get(resource, 0) + amount
    assert held[tenant.pk] == expected


def test_demand_in_use_of_no_tenants_or_idle_ones_is_empty(tenant):
    assert demand_in_use(tenant_ids=[]) == {}
    _workload(tenant, "gone", WorkloadStatus.DELETED, {H100: 1})
    assert demand_in_use(tenant_ids=[tenant.pk]) == {}
