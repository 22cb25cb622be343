"""Issue 34, item 5: the fleet by cluster and by site. The overview shows each site's clusters
(reachability with its last error, nodes by state, GPU classes free and in use) in the same
queries whatever their number; the node list filters by cluster and a node's page names it;
platform admins edit clusters in Django admin, a state change audited as a decision."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.models import AuditEvent
from inventory.models import Cluster, NodeState
from inventory.selectors.clusters import cluster_counts, fleet_by_site
from inventory.services.cluster_records import cluster_set_state
from tests.factories import GPUFactory, NodeFactory, SiteFactory

pytestmark = pytest.mark.django_db


def _gpu_node(cluster: str, *, gpus: int = 8, busy: int = 0, **fields):
    node = NodeFactory(cluster_id=cluster, gpus_in_use=busy, **fields)
    for index in range(gpus):
        GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    return node


@pytest.fixture
def fleet():
    """main (no site): 2 nodes, 16 H100s, 10 busy; west (Frankfurt), unreachable: one node
    cordoned; east (Frankfurt)."""
    fra = SiteFactory(slug="fra", name="Frankfurt")
    Cluster.objects.create(
        slug="west", name="West", site=fra, reachable=False, failures=3,
        unreachable_since=timezone.now() - timedelta(minutes=5),
        last_error="connection refused by 10.0.0.7:6443",
    )
    Cluster.objects.create(slug="east", name="East", site=fra)
    _gpu_node("main", busy=6)
    _gpu_node("main", busy=4)
    _gpu_node("west", state=NodeState.CORDONED)


def test_counts_per_cluster(fleet):
    counts = cluster_counts()
    main = counts["main"]
    assert main.nodes == 2 and [(s, n) for s, _, n, _ in main.states] == [("available", 2)]
    (h100,) = main.gpus
    assert (h100.installed, h100.healthy, h100.in_use, h100.free) == (16, 16, 10, 6)
    (west_h100,) = counts["west"].gpus
    # A cordoned node's GPUs are installed, not healthy: nothing of it is free.
    assert (west_h100.installed, west_h100.healthy, west_h100.free) == (8, 0, 0)
    assert "east" not in counts


def test_clusters_grouped_by_site(fleet):
    sites = fleet_by_site(cluster_counts())
    assert [(s.name, [v.cluster.slug for v in s.clusters]) for s in sites] == [
        ("Frankfurt", ["east", "west"]), ("", ["main"])]


def test_the_overview_shows_each_cluster_with_its_reachability(login, platform_admin, fleet):
    page = login(platform_admin).get("/fleet/").content.decode()
    assert 'data-site="fra" aria-labelledby="site-fra"' in page
    west = page[page.index('data-cluster="west"'):page.index('data-cluster="east"')
                if page.index('data-cluster="east"') > page.index('data-cluster="west"')
                else len(page)]
    assert 'data-cluster-status="unreachable">Unreachable</span>' in west
    assert ('(3 failed tries): <span class="text-break">connection refused by 10.0.0.7:6443'
            in west)
    assert 'href="/fleet/nodes/?cluster=west&amp;state=cordoned"' in west
    main = page[page.index('data-cluster="main"'):]
    assert 'data-free="6">6</td>' in main and 'data-in-use="10">10</td>' in main


def test_the_overview_reads_the_same_queries_however_many_clusters(login, platform_admin,
                                                                    fleet):
    client = login(platform_admin)
    client.get("/fleet/")
    before = _queries(client)
    for n in range(4):
        Cluster.objects.create(slug=f"more-{n}", name=f"More {n}")
        _gpu_node(f"more-{n}")
    assert _queries(client) == before


def _queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        client.get("/fleet/")
    return len(queries)


def test_the_node_list_filters_by_cluster_and_shows_it(login, platform_admin, fleet):
    client = login(platform_admin)
    page = client.get("/fleet/nodes/").content.decode()
    assert '<option value="west">west</option>' in page
    assert page.count('data-cluster="main"') == 2
    page = client.get("/fleet/nodes/?cluster=west").content.decode()
    assert page.count('data-cluster="west">west</td>') == 1
    assert 'data-cluster="main"' not in page
    assert client.get("/fleet/nodes/?cluster=nowhere").status_code == 400


def test_a_nodes_page_names_its_cluster(login, platform_admin):
    Cluster.objects.create(slug="west", name="West")
    node = _gpu_node("west")
    page = login(platform_admin).get(f"/fleet/nodes/{node.pk}/").content.decode()
    assert 'data-cluster="west">west</a>' in page


def test_draining_a_cluster_is_an_audited_decision(platform_admin):
    cluster = Cluster.objects.get(slug="main")
    cluster_set_state(cluster=cluster, state="draining", actor=platform_admin)
    cluster_set_state(cluster=cluster, state="draining", actor=platform_admin)  # no change

    assert Cluster.objects.get(slug="main").state == "draining"
    (event,) = AuditEvent.objects.filter(action="cluster.state")
    assert event.actor == platform_admin and event.changes == {"state": ["active", "draining"]}
    assert not Cluster.objects.placeable().filter(slug="main").exists()


def test_clusters_in_django_admin(login, platform_admin, fleet):
    client = login(platform_admin)
    listing = client.get("/admin/inventory/cluster/").content.decode()
    assert "Unreachable" in listing and "West" in listing

    west = Cluster.objects.get(slug="west")
    form = client.get(f"/admin/inventory/cluster/{west.pk}/change/").content.decode()
    assert 'name="slug"' not in form  # read-only once created
    response = client.post(f"/admin/inventory/cluster/{west.pk}/change/", {
        "name": "West hall", "site": west.site_id, "api_server": "", "state": "retired",
        "credentials": "environment", "kubeconfig_path": "", "kube_context": "",
        "secret_name": "",
    })
    assert response.status_code == 302, response.content.decode()[:3000]
    west.refresh_from_db()
    assert (west.name, west.state, west.slug) == ("West hall", "retired", "west")
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"cluster.update", "cluster.state"} <= actions

    response = client.post("/admin/inventory/cluster/add/", {
        "slug": "north", "name": "North", "site": "", "api_server": "", "state": "active",
        "credentials": "kubeconfig", "kubeconfig_path": "", "kube_context": "",
        "secret_name": "",
    })
    assert "Name the kubeconfig file." in response.content.decode()
    assert not Cluster.objects.filter(slug="north").exists()
