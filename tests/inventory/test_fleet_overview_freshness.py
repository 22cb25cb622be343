"""The fleet overview is cached per version of the tables it is drawn from (core.stamps):
between two writes a view is a cheap read, and every write path moves what it shows at once.

These tests commit (transaction=True), as the services' transactions do: a transaction that
wrote something itself reads the overview without the cache (see core.stamps)."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from billing.calculations.money import floor_hour
from inventory import dcgm
from inventory.models import GPU, HealthEvent, Node, NodeState
from inventory.services import health, lifecycle, records
from tenants.access.services import tenant_update
from tenants.models import Tenant
from tenants.quota.services import quota_set
from tenants.workloads import services as workloads
from tenants.workloads.models import Workload, WorkloadStatus
from tests.billing.usage_data import allocated, measured
from tests.factories import GPUFactory, NodeFactory, QuotaFactory, SiteFactory
from tests.tenants.workloads.conftest import H100, INFERENCE_SPEC

pytestmark = pytest.mark.django_db(transaction=True)

# Session, user, roles and memberships (one query), the tables' versions, pending quota
# requests (the nav), the clusters (their reachability is read on every view).
CACHED_OVERVIEW_QUERIES = 6


@pytest.fixture
def admin(login, platform_admin):
    return login(platform_admin)


@pytest.fixture
def fleet(db):
    nodes = [NodeFactory(hostname=f"n{i}", reserved_for="") for i in range(2)]
    for node in nodes:
        for index in range(4):
            GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    return nodes


def overview(client):
    response = client.get("/fleet/")
    assert response.status_code == 200
    return response


def _capacity(response, key=H100):
    return next(row for row in response.context["resource_capacity"] if row.resource == key)


def _held(response, key=H100):
    return {row.total.resource: row.total for row in response.context["holdings"].classes}.get(key)


def test_between_writes_the_overview_is_read_from_the_cache(admin, fleet):
    first = overview(admin)
    with CaptureQueriesContext(connection) as queries:
        again = overview(admin)
    assert len(queries) == CACHED_OVERVIEW_QUERIES
    assert again.context["parts"] == first.context["parts"]
    assert all(html in again.content.decode() for html in again.context["parts"].values())
    assert again.context["totals"] == {"nodes": 2, "sites": 2, "gpus": 8}


def test_a_lifecycle_move_shows_at_once(admin, fleet, platform_admin):
    states = dict((s, n) for s, _, n, _ in overview(admin).context["states"])
    assert states[NodeState.AVAILABLE] == 2
    lifecycle.node_cordon(node_id=fleet[0].pk, actor=platform_admin, reason="fan")
    response = overview(admin)
    states = dict((s, n) for s, _, n, _ in response.context["states"])
    assert (states[NodeState.AVAILABLE], states[NodeState.CORDONED]) == (1, 1)
    assert _capacity(response).healthy == 4  # GPUs of available nodes only
    assert 'id="nodes-by-state"' in response.content.decode()


def test_the_health_sweep_and_resolving_an_event_show_at_once(admin, fleet, platform_admin):
    assert overview(admin).context["health"].open_total == 0
    health.health_observations_record(observations=[dcgm.Observation(
        host=fleet[0].hostname, kind="xid", severity="critical", value=79.0,
        detail="GPU fell off the bus", gpu_index=0,
    )])
    response = overview(admin)
    summary = response.context["health"]
    assert summary.open_critical == 1 and summary.nodes_affected == 1
    assert [e.node_id for e in response.context["open_events"]] == [fleet[0].pk]
    event = HealthEvent.objects.get()
    health.health_event_resolve(event_id=event.pk, actor=platform_admin, note="reseated")
    response = overview(admin)
    assert response.context["health"].open_total == 0
    assert response.context["open_events"] == []


def test_gpus_changed_in_bulk_show_at_once(admin, fleet):
    assert overview(admin).context["health"].gpus_failed == 0
    GPU.objects.filter(node=fleet[1]).update(health=GPU.Health.FAILED)  # as the cluster sync
    response = overview(admin)
    assert response.context["health"].gpus_failed == 4
    assert _capacity(response).healthy == 4
    GPUFactory(node=fleet[1], index=4, model="nvidia-h100-80gb")
    assert overview(admin).context["totals"]["gpus"] == 9


def test_sites_and_nodes_recorded_show_at_once(admin, fleet, platform_admin):
    assert overview(admin).context["totals"]["sites"] == 2
    site = SiteFactory(slug="extra")
    records.record_save(actor=platform_admin, obj=site, changed=["name"])
    NodeFactory(rack__site=site)
    totals = overview(admin).context["totals"]
    assert (totals["sites"], totals["nodes"]) == (3, 3)
    Node.objects.filter(rack__site=site).delete()
    assert overview(admin).context["totals"]["nodes"] == 2


def test_quotas_and_tenants_show_at_once(admin, fleet, tenant, platform_admin):
    assert _capacity(overview(admin)).granted == 0
    quota_set(actor=platform_admin, tenant=tenant, resource=H100, limit=6)
    response = overview(admin)
    assert _capacity(response).granted == 6
    assert _held(response).granted == 6
    tenant.status = Tenant.Status.SUSPENDED
    tenant_update(actor=platform_admin, tenant=tenant, changed=["status"])
    assert _capacity(overview(admin)).granted == 0  # active tenants' quotas only


def test_workloads_launched_and_gone_show_at_once(
    admin, fleet, tenant, tenant_member, simulated_gateway
):
    for resource, limit in {H100: 4, "cpu": 32, "memory-gib": 256, "storage-gib": 100,
                            "count:inference": 3}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    assert _held(overview(admin)).held == 0
    workload = workloads.workload_launch(
        tenant=tenant, actor=tenant_member, kind="inference", name="chat",
        spec={**INFERENCE_SPEC, "max_replicas": 2},
    )
    assert _held(overview(admin)).held == 2
    # However its status moves (provisioning, observation, deletion), the holdings follow.
    Workload.objects.filter(pk=workload.pk).update(status=WorkloadStatus.DELETED)
    assert _held(overview(admin)).held == 0


def test_metered_usage_shows_at_once(admin, tenant):
    week, _ = overview(admin).context["utilization_headline"]
    assert week.total.utilization_percent is None
    hour = floor_hour(timezone.now())
    allocated(tenant, H100, hour, 4 * 3600)
    measured(tenant, H100, hour, 4 * 3600, 2 * 3600)
    week, month = overview(admin).context["utilization_headline"]
    assert week.total.utilization_percent == month.total.utilization_percent == Decimal("50.0")
