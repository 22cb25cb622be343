"""Clusters are data: the gateway reaches each through the credentials its row names, one pooled
client per cluster, and what one cluster holds is its own (two API emulators at once)."""

import base64
import json

import pytest

from core.fleet import PermanentFleetError, get_gateway, reset_gateway
from core.fleet.kubernetes import KubernetesFleetGateway
from demo.fleet.simulated import SimulatedFleetGateway
from inventory.models import DEFAULT_CLUSTER, Cluster, InventoryRun, Node
from inventory.services.connections import cluster_connection
from inventory.services.sync import cluster_sync
from tests.support.kube_emulator import running_kube_emulator

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_emulators():
    with running_kube_emulator() as first, running_kube_emulator() as second:
        yield first, second


@pytest.fixture
def kubernetes_fleet(settings):
    settings.FLEET_BACKEND = "kubernetes"
    yield
    reset_gateway()


def _cluster(slug: str, **fields) -> Cluster:
    return Cluster.objects.create(slug=slug, name=slug.title(), **fields)


def _node(name: str) -> dict:
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def test_every_fleet_has_the_default_cluster_reached_with_the_portals_own_credentials():
    main = Cluster.objects.get(slug=DEFAULT_CLUSTER)

    assert main.credentials == Cluster.Credentials.ENVIRONMENT
    connection = cluster_connection(DEFAULT_CLUSTER)
    assert (connection.kubeconfig, connection.context, connection.secret) == ("", "", "")


def test_an_unknown_or_retired_cluster_is_refused_before_anything_is_sent():
    _cluster("old", state=Cluster.State.RETIRED)

    with pytest.raises(PermanentFleetError) as unknown:
        get_gateway("nowhere")
    with pytest.raises(PermanentFleetError) as retired:
        get_gateway("old")

    assert unknown.value.status == 404 and "no cluster 'nowhere'" in str(unknown.value)
    assert retired.value.status == 410 and "retired" in str(retired.value)


def test_each_cluster_is_reached_through_its_own_kubeconfig_with_one_pooled_client(
    two_emulators, kubernetes_fleet, tmp_path
):
    first, second = two_emulators
    _cluster("fra-1", credentials="kubeconfig",
             kubeconfig_path=str(first.write_kubeconfig(tmp_path / "fra.json")))
    _cluster("ams-1", credentials="kubeconfig",
             kubeconfig_path=str(second.write_kubeconfig(tmp_path / "ams.json")))
    first.put_object(_node("gpu-a"))
    second.put_object(_node("gpu-b"))

    fra, ams = get_gateway("fra-1"), get_gateway("ams-1")

    assert isinstance(fra.inner, KubernetesFleetGateway) and fra.inner is not ams.inner
    assert get_gateway("fra-1").inner is fra.inner  # pooled
    assert [n["metadata"]["name"] for n in fra.list_nodes()] == ["gpu-a"]
    assert [n["metadata"]["name"] for n in ams.list_nodes()] == ["gpu-b"]


def test_new_credentials_get_a_new_client_in_every_process(two_emulators, kubernetes_fleet,
                                                           tmp_path):
    first, second = two_emulators
    cluster = _cluster("fra-1", credentials="kubeconfig",
                       kubeconfig_path=str(first.write_kubeconfig(tmp_path / "a.json")))
    second.put_object(_node("moved"))
    before = get_gateway("fra-1").inner

    # Another process (an admin's edit) moves the cluster's credentials.
    Cluster.objects.filter(pk=cluster.pk).update(
        kubeconfig_path=str(second.write_kubeconfig(tmp_path / "b.json")))

    after = get_gateway("fra-1").inner
    assert after is not before
    assert [n["metadata"]["name"] for n in after.list_nodes()] == ["moved"]


def test_a_cluster_reached_through_a_secret_in_the_portals_namespace(
    two_emulators, kubernetes_fleet, settings, tmp_path
):
    own, remote = two_emulators
    settings.FLEET_KUBECONFIG = str(own.write_kubeconfig(tmp_path / "own.json"))
    settings.FLEET_SERVICE_ACCOUNT_NAMESPACE = "ai-factory-portal"
    remote_config = remote.write_kubeconfig(tmp_path / "remote.json").read_bytes()
    own.put_object({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "ams-1-kubeconfig", "namespace": "ai-factory-portal"},
        "data": {"kubeconfig": base64.b64encode(remote_config).decode()},
    })
    remote.put_object(_node("far-away"))
    _cluster("ams-1", credentials="secret", secret_name="ams-1-kubeconfig")

    nodes = get_gateway("ams-1").list_nodes()

    assert [n["metadata"]["name"] for n in nodes] == ["far-away"]
    assert own.requests("GET", "/api/v1/namespaces/ai-factory-portal/secrets/ams-1-kubeconfig")


def test_a_secret_without_a_kubeconfig_is_a_clear_permanent_error(
    kube_emulator, kubernetes_fleet, settings, tmp_path
):
    settings.FLEET_KUBECONFIG = str(kube_emulator.write_kubeconfig(tmp_path / "own.json"))
    settings.FLEET_SERVICE_ACCOUNT_NAMESPACE = "ai-factory-portal"
    kube_emulator.put_object({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "empty", "namespace": "ai-factory-portal"},
        "data": {"token": base64.b64encode(b"x").decode()},
    })
    _cluster("ams-1", credentials="secret", secret_name="empty")

    with pytest.raises(PermanentFleetError, match="Secret empty has no key 'kubeconfig'"):
        get_gateway("ams-1").list_nodes()


def test_each_simulated_cluster_is_a_fleet_of_its_own(settings):
    settings.FLEET_BACKEND = "simulated"
    _cluster("ams-1")
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-acme"}}

    get_gateway("main").apply(manifests=[namespace])

    assert isinstance(get_gateway("ams-1").inner, SimulatedFleetGateway)
    assert get_gateway("main").get(api_version="v1", kind="Namespace", name="tenant-acme")
    assert get_gateway("ams-1").get(api_version="v1", kind="Namespace", name="tenant-acme") is None
    reset_gateway()


def test_the_sync_reads_each_cluster_into_its_own_nodes(two_emulators, kubernetes_fleet,
                                                        tmp_path):
    first, second = two_emulators
    _cluster("fra-1", credentials="kubeconfig",
             kubeconfig_path=str(first.write_kubeconfig(tmp_path / "fra.json")))
    _cluster("ams-1", credentials="kubeconfig",
             kubeconfig_path=str(second.write_kubeconfig(tmp_path / "ams.json")))
    first.put_object(_node("gpu-1") | {"metadata": {"name": "gpu-1", "labels": {
        "kubernetes.io/hostname": "fra-gpu-1"}}})
    second.put_object(_node("gpu-1") | {"metadata": {"name": "gpu-1", "labels": {
        "kubernetes.io/hostname": "ams-gpu-1"}}})

    fra_run, ams_run = cluster_sync(cluster="fra-1"), cluster_sync(cluster="ams-1")
    again = cluster_sync(cluster="fra-1")

    # The same Kubernetes name on two clusters is two nodes.
    assert sorted(Node.objects.values_list("cluster_id", "k8s_name")) == [
        ("ams-1", "gpu-1"), ("fra-1", "gpu-1")]
    assert (fra_run.cluster_id, ams_run.cluster_id) == ("fra-1", "ams-1")
    assert again.summary["created"] == []
    assert InventoryRun.objects.filter(cluster_id="fra-1").count() == 2
    assert json.dumps(again.summary)  # recorded as plain data
