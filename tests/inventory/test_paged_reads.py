"""Cluster-wide reads are paged and narrow: every list reads `limit` objects a page and follows
`continue`; a drain reads only its own node's pods (field selector `spec.nodeName`)."""

import pytest

from core.fleet.kubernetes import KubernetesFleetGateway
from inventory.models import Node, NodeState
from inventory.services import lifecycle
from tests.factories import NodeFactory

from .cluster_objects import RTX_LABELS, node, pod

NAME = "gpu-a-001"


@pytest.fixture
def small_pages(kube_emulator, tmp_path):
    """The real gateway against the emulator, reading three objects a page."""
    gateway = KubernetesFleetGateway(
        api_client=kube_emulator.api_client(), request_timeout=2.0, page_size=3,
        discovery_cache_file=str(tmp_path / "kube-discovery.json"),
    )
    yield gateway
    gateway.api_client.close()


def test_a_list_longer_than_a_page_returns_every_object_across_pages(small_pages,
                                                                     kube_emulator):
    for index in range(8):
        kube_emulator.put_object(pod(f"p-{index}", f"ns-{index % 3}", f"node-{index % 2}"))

    pods = small_pages.list(api_version="v1", kind="Pod")

    assert sorted(p["metadata"]["name"] for p in pods) == [f"p-{i}" for i in range(8)]
    pages = kube_emulator.requests("GET", "/api/v1/pods")
    assert [r.params.get("limit") for r in pages] == ["3", "3", "3"]
    assert "continue" not in pages[0].params
    assert all(r.params.get("continue") for r in pages[1:])
    assert len({r.params["continue"] for r in pages[1:]}) == 2


def test_a_label_selected_list_is_paged_too(small_pages, kube_emulator):
    for index in range(5):
        kube_emulator.put_object(node(f"n-{index}", RTX_LABELS, gpus=8))
        kube_emulator.put_object(node(f"cpu-{index}", {"role": "cpu"}))

    nodes = small_pages.list_nodes(label_selector="role!=cpu")

    assert sorted(n["metadata"]["name"] for n in nodes) == [f"n-{i}" for i in range(5)]
    pages = kube_emulator.requests("GET", "/api/v1/nodes")
    assert len(pages) == 2 and all(r.params["labelSelector"] == "role!=cpu" for r in pages)


@pytest.mark.django_db
def test_a_drain_reads_only_its_own_nodes_pods(
    kube_emulator, small_pages, django_capture_on_commit_callbacks, settings
):
    from core.fleet import gateway_override

    kube_emulator.put_object(node(NAME, RTX_LABELS | {"kubernetes.io/hostname": NAME}, gpus=8))
    cluster_node = NodeFactory(hostname=NAME, k8s_name=NAME, state=NodeState.AVAILABLE)
    mine = [pod(f"train-{i}", "tenant-acme", NAME, gpus=1) for i in range(4)]
    others = [pod(f"serve-{i}", f"tenant-{i % 5}", f"other-{i % 7}", gpus=1) for i in range(40)]
    for obj in mine + others:
        kube_emulator.put_object(obj)

    with gateway_override(small_pages), django_capture_on_commit_callbacks(execute=True):
        lifecycle.node_drain(node_id=cluster_node.pk, actor=None, reason="XID 79")

    reads = kube_emulator.requests("GET", "/api/v1/pods")
    assert reads, "the drain read the node's pods"
    assert all(r.params.get("fieldSelector") == f"spec.nodeName={NAME}" for r in reads)
    assert all(r.params.get("limit") == "3" for r in reads)
    evicted = [r.path for r in kube_emulator.requests("POST")]
    assert sorted(evicted) == sorted(
        f"/api/v1/namespaces/tenant-acme/pods/train-{i}/eviction" for i in range(4)
    )
    assert len(kube_emulator.list_objects("v1", "Pod")) == 40  # the others are untouched
    assert Node.objects.get(pk=cluster_node.pk).state == NodeState.MAINTENANCE


def test_the_emulator_refuses_a_field_the_kind_cannot_be_selected_on(small_pages,
                                                                     kube_emulator):
    from core.fleet import PermanentFleetError

    resource = small_pages._resource("v1", "Node")
    with pytest.raises(PermanentFleetError) as refused:
        small_pages._pages(resource, field_selector="spec.nodeName=x")
    assert refused.value.status == 400


def test_a_continue_token_that_expired_starts_the_list_over_once(small_pages, kube_emulator):
    import kmock

    from tests.support.kube_api import status_body

    for index in range(8):
        kube_emulator.put_object(pod(f"p-{index}", "ns", "node-0"))
    expired: list[str] = []

    def expire(request):
        if expired:
            return StopIteration  # kmock retires the reaction: served as usual from now on
        expired.append(request.params["continue"])
        return kmock.Response(status=410, payload=status_body(
            410, "Expired", "The provided continue parameter is too old"))

    def second_page(request) -> bool:
        return request.url.path == "/api/v1/pods" and "continue" in request.params

    kube_emulator._in_loop(lambda: kube_emulator.handler[second_page] << expire)

    pods = small_pages.list(api_version="v1", kind="Pod")

    assert len(pods) == 8 and len(expired) == 1
    pages = kube_emulator.requests("GET", "/api/v1/pods")
    assert ["continue" in r.params for r in pages] == [False, True, False, True, True]
