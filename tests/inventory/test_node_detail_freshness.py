"""A node's page is drawn from its own rows (node, rack and site, GPUs, NICs, validations,
health events), cached per version of those tables (core.stamps), its timeline's audit trail
read on every view: between two writes a view is a cheap read, and every write path shows at
once. These tests commit (transaction=True), as the services' transactions do."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory import dcgm
from inventory.models import GPU, NIC, HealthEvent, Node, NodeState
from inventory.services import health, lifecycle, records
from tests.factories import GPUFactory, NodeFactory

pytestmark = pytest.mark.django_db(transaction=True)

# Session, user, roles and memberships (one query); the tables' versions; the timeline's audit
# trail; the navigation's count of quota requests waiting for a decision.
CACHED_NODE_DETAIL_QUERIES = 6


@pytest.fixture
def admin(login, platform_admin):
    return login(platform_admin)


def _node(gpus: int = 4, **fields) -> Node:
    node = NodeFactory(**fields)
    for index in range(gpus):
        GPUFactory(node=node, index=index, numa_node=index % 2)
    return node


def page(client, node) -> str:
    response = client.get(f"/fleet/nodes/{node.pk}/")
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("gpus", [1, 8])
def test_between_writes_a_node_page_takes_the_same_few_queries(admin, gpus):
    node = _node(gpus)
    NIC.objects.create(node=node, name="ib0", kind="infiniband", numa_node=0)
    first = page(admin, node)
    with CaptureQueriesContext(connection) as queries:
        again = page(admin, node)
    assert len(queries) == CACHED_NODE_DETAIL_QUERIES
    assert again.count('data-gpu="') == gpus and "ib0" in again
    assert first.count('data-numa="') == again.count('data-numa="') == min(gpus, 2)


def test_another_nodes_page_is_its_own(admin):
    one, other = _node(hostname="one"), _node(hostname="other")
    assert "one" in page(admin, one)
    assert '<i class="bi bi-hdd-stack text-body-tertiary"></i> other' in page(admin, other)
    assert admin.get("/fleet/nodes/999999/").status_code == 404


def test_gpus_and_nics_changed_show_at_once(admin):
    node = _node()
    assert page(admin, node).count('data-gpu="') == 4
    GPU.objects.filter(node=node, index=1).update(health=GPU.Health.FAILED)  # the cluster sync
    GPUFactory(node=node, index=4)
    html = page(admin, node)
    assert html.count('data-gpu="') == 5 and ">Failed</span>" in html
    NIC.objects.create(node=node, name="eth7", link_speed_gbps=400)
    assert "eth7" in page(admin, node)


def test_lifecycle_moves_and_validations_show_at_once(admin, platform_admin):
    node = _node(state=NodeState.VALIDATING)
    assert "soak passed at 700 W" not in page(admin, node)
    for kind in ("burn-in", "nccl"):
        lifecycle.node_validation_record(node_id=node.pk, actor=platform_admin, kind=kind,
                                         passed=True, summary="soak passed at 700 W")
    assert page(admin, node).count("soak passed at 700 W") == 4  # listed, and in the timeline
    lifecycle.node_transition(node_id=node.pk, target=NodeState.AVAILABLE,
                              actor=platform_admin, reason="passed")
    html = page(admin, node)
    assert 'data-state="available"' in html
    assert "validating → available" in html  # the timeline, from the audit trail


def test_health_events_opened_and_resolved_show_at_once(admin, platform_admin):
    node = _node()
    assert 'action="/fleet/events/' not in page(admin, node)
    health.health_observations_record(observations=[dcgm.Observation(
        host=node.hostname, kind="xid", severity="critical", value=79.0,
        detail="GPU fell off the bus", gpu_index=0,
    )])
    html = page(admin, node)
    assert "GPU fell off the bus" in html and 'data-health="critical"' in html
    event = HealthEvent.objects.get()
    health.health_event_resolve(event_id=event.pk, actor=platform_admin, note="reseated")
    html = page(admin, node)
    assert "Resolved: " in html and "reseated" in html


def test_node_details_rack_and_site_edits_show_at_once(admin, platform_admin):
    node = _node()
    node.bmc_address = "10.9.8.7"
    records.node_details_save(actor=platform_admin, node=node, changed=["bmc_address"])
    assert "<code>10.9.8.7</code>" in page(admin, node)
    site = node.rack.site
    site.slug = "elsewhere"
    records.record_save(actor=platform_admin, obj=site, changed=["slug"])
    assert f"elsewhere/{node.rack.name}</a>" in page(admin, node)
    Node.objects.filter(pk=node.pk).update(placed_pods=[{"namespace": "acme", "name": "p-1",
                                                         "gpus": 2}])
    assert "p-1" in page(admin, node)
