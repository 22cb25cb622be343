"""Issue 34, items 4 and 5 on the pages and the API: the launch form's Cluster select (the
portal's choice, each option with its site and room), a launch on a cluster picked by form or
API (a cluster that is no option is a field error, nothing stored), and the workload's cluster
on its page, in the list (filtered by cluster) and in the API."""

import pytest

from inventory.models import Cluster
from tenants.workloads import services
from tenants.workloads.models import Workload
from tests.factories import GPUFactory, NodeFactory, SiteFactory

from .conftest import H100, INFERENCE_SPEC
from .test_pages import FORM

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_clusters(gpu_pool, workload_quota):
    """main: the shared pool's 16 H100s, 12 of them busy; west (Frankfurt): 8 free."""
    workload_quota(**{H100: 8})
    for node in gpu_pool:
        node.gpus_in_use = 6
        node.save()
    Cluster.objects.create(slug="west", name="West", site=SiteFactory(slug="fra",
                                                                      name="Frankfurt"))
    node = NodeFactory(cluster_id="west")
    for index in range(8):
        GPUFactory(node=node, index=index, model="nvidia-h100-80gb")


def test_the_launch_form_offers_each_cluster_with_its_site_and_room(login, tenant_member,
                                                                     two_clusters):
    member = login(tenant_member)
    page = member.get("/t/acme/workloads/new/inference/").content.decode()
    # Before the form is filled in: where it may go, its room not known yet.
    assert '<option value="west">West · Frankfurt</option>' in page
    page = member.post("/t/acme/workloads/new/inference/check/", {**FORM, "gpus_per_replica": "2"},
                       HTTP_HX_REQUEST="true").content.decode()
    assert '<option value="" selected>Let the portal choose (now: West)</option>' in page
    assert ('<option value="west">West · Frankfurt — 8 of 8 NVIDIA H100 80GB HBM3 GPUs free'
            '</option>') in page
    assert '<option value="main">Main cluster — 4 of 16 NVIDIA H100 80GB HBM3 GPUs free' in page
    assert "The price is the same on every cluster." in page


def test_a_launch_from_the_form_goes_to_the_cluster_picked(login, tenant_member, two_clusters,
                                                          simulated_gateway):
    response = login(tenant_member).post("/t/acme/workloads/new/inference/",
                                         {**FORM, "cluster": "main"})
    assert response.status_code == 302
    assert Workload.objects.get().cluster_id == "main"


def test_a_launch_from_the_form_left_to_the_portal_goes_to_the_roomiest(
        login, tenant_member, two_clusters, simulated_gateway):
    login(tenant_member).post("/t/acme/workloads/new/inference/", {**FORM, "cluster": ""})
    assert Workload.objects.get().cluster_id == "west"


def test_a_cluster_that_is_no_option_is_a_field_error_on_the_form(login, tenant_member,
                                                                  two_clusters):
    Cluster.objects.filter(slug="west").update(state=Cluster.State.DRAINING)
    response = login(tenant_member).post("/t/acme/workloads/new/inference/",
                                         {**FORM, "cluster": "west"})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-error-for="cluster"' in html
    assert "“west” is not a cluster this launch may go to (draining, it takes no new work)" in html
    assert not Workload.objects.exists()


def test_the_api_launches_on_the_cluster_named(api_client, tenant_member, two_clusters,
                                               simulated_gateway):
    api_client.force_login(tenant_member)
    body = {"tenant": "acme", "kind": "inference", "name": "chat", "cluster": "main",
            "spec": {**INFERENCE_SPEC, "max_replicas": 1}}
    response = api_client.post("/api/v1/workloads/", body, format="json")
    assert response.status_code == 202, response.content
    assert response.data["cluster"]["slug"] == "main"
    assert Workload.objects.get().cluster_id == "main"


@pytest.mark.parametrize("cluster", ["nowhere", "west"])
def test_the_api_refuses_a_cluster_that_is_no_option(api_client, tenant_member, two_clusters,
                                                      cluster):
    Cluster.objects.filter(slug="west").update(reachable=False)
    api_client.force_login(tenant_member)
    body = {"tenant": "acme", "kind": "inference", "name": "chat", "cluster": cluster,
            "spec": {**INFERENCE_SPEC, "max_replicas": 1}}
    response = api_client.post("/api/v1/workloads/", body, format="json")
    assert response.status_code == 400
    assert "cluster" in response.json()["error"]["fields"], response.json()
    assert not Workload.objects.exists()


def _launched(tenant, who, name, cluster):
    return services.workload_launch(tenant=tenant, actor=who, kind="inference", name=name,
                                    spec={**INFERENCE_SPEC, "max_replicas": 1}, cluster=cluster)


def test_the_list_shows_and_filters_by_cluster(login, tenant, tenant_member, two_clusters,
                                               api_client):
    _launched(tenant, tenant_member, "on-main", "main")
    _launched(tenant, tenant_member, "on-west", "west")
    member = login(tenant_member)

    page = member.get("/t/acme/workloads/").content.decode()
    assert '<td class="small font-monospace" data-cluster="west">west</td>' in page
    assert '<option value="west">West</option>' in page

    page = member.get("/t/acme/workloads/?cluster=west").content.decode()
    assert "on-west" in page and "on-main" not in page

    detail = member.get(f"/t/acme/workloads/{Workload.objects.get(name='on-west').pk}/")
    assert 'data-cluster="west">West <span class="text-muted">· Frankfurt</span>' in (
        detail.content.decode())

    api_client.force_login(tenant_member)
    listed = api_client.get("/api/v1/workloads/?cluster=west").json()
    assert [(w["name"], w["cluster"]["slug"]) for w in listed["results"]] == [("on-west", "west")]


def test_the_api_check_says_where_a_launch_may_go(api_client, tenant_member, two_clusters):
    api_client.force_login(tenant_member)
    body = {"tenant": "acme", "kind": "inference",
            "spec": {**INFERENCE_SPEC, "gpus_per_replica": 2, "max_replicas": 1}}
    answer = api_client.post("/api/v1/workloads/check/", body, format="json").json()
    assert [(c["cluster"], c["site"], c["fits"]) for c in answer["clusters"]] == [
        ("west", "Frankfurt", True), ("main", "", True)]
    assert answer["clusters"][1]["room"] == "4 of 16 NVIDIA H100 80GB HBM3 GPUs free"
    assert answer["unplaced"] == ""

    Cluster.objects.update(state=Cluster.State.DRAINING)
    answer = api_client.post("/api/v1/workloads/check/", body, format="json").json()
    assert answer["clusters"] == []
    assert answer["unplaced"].startswith("No cluster has room for 2 NVIDIA H100 80GB HBM3 GPUs")
