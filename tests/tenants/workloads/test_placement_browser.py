"""In headless Chromium, two clusters: the launch form's Cluster select follows what the form
asks (its room per cluster, the portal's choice), the launch goes where it was picked and its
page says so; the fleet overview shows each site's clusters, the node list filters by one."""

import pytest
from django.utils import timezone

from inventory.models import Cluster
from tenants.workloads.models import Workload
from tests.factories import TEST_PASSWORD, GPUFactory, NodeFactory, SiteFactory
from tests.support.fixtures_browser import screenshot, sign_in

from .conftest import H100

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_clusters(tenant, tenant_member, gpu_pool, workload_quota, simulated_gateway):
    """main (site of the gpu pool): 16 H100s, 12 busy; west in Frankfurt: 8 free; east in
    Frankfurt, not answering."""
    workload_quota(**{H100: 8})
    for node in gpu_pool:
        node.gpus_in_use = 6
        node.save()
    fra = SiteFactory(slug="fra", name="Frankfurt")
    Cluster.objects.create(slug="west", name="West", site=fra)
    Cluster.objects.create(slug="east", name="East", site=fra, reachable=False, failures=4,
                           unreachable_since=timezone.now(),
                           last_error="dial tcp 10.20.0.1:6443: connect: connection refused")
    node = NodeFactory(cluster_id="west", hostname="fra-gpu-01", k8s_name="fra-gpu-01")
    for index in range(8):
        GPUFactory(node=node, index=index, model="nvidia-h100-80gb")


def test_the_launch_form_offers_the_clusters_and_launches_where_picked(two_clusters, page):
    sign_in(page, "member", TEST_PASSWORD)
    page.goto("/t/acme/workloads/new/inference/")
    page.fill("#id_name", "chat")
    page.fill("#id_model_uri", "hf://meta-llama/Llama-3.1-8B-Instruct")
    page.select_option("#id_gpu", H100)
    page.fill("#id_gpus_per_replica", "2")
    page.locator("#id_gpus_per_replica").blur()
    page.locator("#id_cluster option", has_text="(now: West)").wait_for(state="attached")
    options = page.locator("#id_cluster option").all_inner_texts()
    assert options == [
        "Let the portal choose (now: West)",
        "West · Frankfurt — 8 of 8 NVIDIA H100 80GB HBM3 GPUs free",
        "Main cluster — 4 of 16 NVIDIA H100 80GB HBM3 GPUs free",
    ]
    page.locator("#field-cluster").scroll_into_view_if_needed()
    screenshot(page, "placement-launch-form-cluster-select")

    page.select_option("#id_cluster", "main")
    with page.expect_navigation():
        page.click("#launch-submit")
    assert Workload.objects.get().cluster_id == "main"
    assert page.locator("#workload-cluster").inner_text().startswith("Main cluster")


def test_the_fleet_overview_by_cluster_and_the_node_filter(two_clusters, platform_admin,
                                                           page):
    sign_in(page, "platform-admin", TEST_PASSWORD)
    page.goto("/fleet/")
    east = page.locator('[data-cluster="east"]')
    assert east.locator("[data-cluster-status]").inner_text() == "Unreachable"
    assert "connection refused" in east.inner_text()
    page.locator("#fleet-clusters").scroll_into_view_if_needed()
    screenshot(page, "placement-fleet-overview-by-cluster")

    page.goto("/fleet/nodes/")
    page.select_option("#id_cluster", "west")
    page.locator("#node-count", has_text="1").wait_for()
    assert page.locator("tr[data-node]").all_inner_texts()[0].startswith("fra-gpu-01")
    assert "cluster=west" in page.url
    screenshot(page, "placement-node-list-cluster-filter")
