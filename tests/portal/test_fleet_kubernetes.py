"""The Kubernetes gateway against an API emulator, over real HTTP with the official client."""

import json
import time
from pathlib import Path

import pytest
from kubernetes.client import ApiException

from core.fleet import (
    PermanentFleetError,
    TransientFleetError,
    classify,
    get_gateway,
)
from core.fleet.kubernetes import KubernetesFleetGateway

GFD_LABELS = json.loads(
    (Path(__file__).parents[1] / "data/nvidia/node-labels-sample-rtx4000ada.json").read_text()
)
RTX_NODE = "lke529760-766837-0a634ab30000"


def namespace(name: str = "acme") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"portal.ai-factory/tenant": name}},
    }


def cluster_queue(name: str = "acme") -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {"matchLabels": {"portal.ai-factory/tenant": name}},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "rtx-4000-ada",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "2"}],
                        }
                    ],
                }
            ],
        },
    }


def inference_service(name: str, ns: str = "acme", team: str = "nlp") -> dict:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"team": team},
            "annotations": {"serving.kserve.io/deploymentMode": "Standard"},
        },
        "spec": {
            "predictor": {
                "model": {
                    "modelFormat": {"name": "vLLM"},
                    "storageUri": "hf://Qwen/Qwen2.5-0.5B-Instruct",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            }
        },
    }


def node(name: str, labels: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def test_apply_creates_objects_and_reapplying_changes_nothing(kube_gateway, kube_emulator):
    manifests = [namespace(), cluster_queue(), inference_service("llm")]

    first = kube_gateway.apply(manifests=manifests)
    second = kube_gateway.apply(manifests=manifests)

    assert [o["kind"] for o in first] == ["Namespace", "ClusterQueue", "InferenceService"]
    assert all(o["metadata"]["uid"] and o["metadata"]["resourceVersion"] for o in first)
    assert [o["metadata"]["uid"] for o in second] == [o["metadata"]["uid"] for o in first]
    assert [o["metadata"]["resourceVersion"] for o in second] == [
        o["metadata"]["resourceVersion"] for o in first
    ]
    stored = kube_emulator.get_object(
        "serving.kserve.io/v1beta1", "InferenceService", "llm", "acme"
    )
    assert stored["spec"]["predictor"]["model"]["modelFormat"] == {"name": "vLLM"}
    writes = [r for r in kube_emulator.requests() if r.method != "GET"]
    assert [r.path for r in writes] == [
        "/api/v1/namespaces/acme",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/acme",
        "/apis/serving.kserve.io/v1beta1/namespaces/acme/inferenceservices/llm",
    ] * 2
    assert {(r.method, r.content_type) for r in writes} == {
        ("PATCH", "application/apply-patch+yaml")
    }
    assert {r.params["fieldManager"] for r in writes} == {"ai-factory-portal"}
    assert {r.params["force"] for r in writes} == {"true"}


def test_apply_of_a_changed_spec_updates_the_object(kube_gateway, kube_emulator):
    kube_gateway.apply(manifests=[cluster_queue()])
    changed = cluster_queue()
    changed["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "4"

    (stored,) = kube_gateway.apply(manifests=[changed])

    quota = stored["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    assert quota == "4"
    assert stored["metadata"]["generation"] == 2


def test_get_returns_the_object_or_none(kube_gateway):
    kube_gateway.apply(manifests=[namespace(), inference_service("llm")])

    found = kube_gateway.get(
        api_version="serving.kserve.io/v1beta1",
        kind="InferenceService",
        name="llm",
        namespace="acme",
    )
    missing = kube_gateway.get(
        api_version="serving.kserve.io/v1beta1",
        kind="InferenceService",
        name="nope",
        namespace="acme",
    )

    assert found["metadata"]["name"] == "llm"
    assert found["kind"] == "InferenceService"
    assert missing is None
    assert kube_gateway.get(api_version="v1", kind="Namespace", name="acme")["metadata"][
        "labels"
    ] == {"portal.ai-factory/tenant": "acme"}


def test_list_is_scoped_by_namespace_and_label_selector(kube_gateway, kube_emulator):
    kube_gateway.apply(
        manifests=[
            inference_service("llm", "acme", team="nlp"),
            inference_service("ocr", "acme", team="vision"),
            inference_service("llm", "globex", team="nlp"),
        ]
    )
    isvc = {"api_version": "serving.kserve.io/v1beta1", "kind": "InferenceService"}

    everywhere = kube_gateway.list(**isvc)
    in_acme = kube_gateway.list(**isvc, namespace="acme")
    nlp_in_acme = kube_gateway.list(**isvc, namespace="acme", label_selector="team=nlp")
    not_nlp = kube_gateway.list(**isvc, label_selector="team!=nlp")

    def names(objs: list[dict]) -> set[tuple[str, str]]:
        return {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs}

    assert names(everywhere) == {("acme", "llm"), ("acme", "ocr"), ("globex", "llm")}
    assert names(in_acme) == {("acme", "llm"), ("acme", "ocr")}
    assert names(nlp_in_acme) == {("acme", "llm")}
    assert names(not_nlp) == {("acme", "ocr")}
    assert all(o["apiVersion"] == "serving.kserve.io/v1beta1" for o in everywhere)
    assert kube_emulator.requests(
        "GET", "/apis/serving.kserve.io/v1beta1/namespaces/acme/inferenceservices"
    )[-1].params == {"labelSelector": "team=nlp", "limit": "500"}


def test_delete_treats_an_already_missing_object_as_done(kube_gateway, kube_emulator):
    kube_gateway.apply(manifests=[inference_service("llm")])
    isvc = {
        "api_version": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "name": "llm",
        "namespace": "acme",
    }

    assert kube_gateway.delete(**isvc) is True
    assert kube_gateway.delete(**isvc) is False
    assert kube_gateway.get(**isvc) is None
    deletes = kube_emulator.requests("DELETE")
    assert len(deletes) == 2
    assert deletes[0].params == {"propagationPolicy": "Background"}


def test_cluster_scoped_objects_ignore_a_namespace_and_namespaced_ones_require_it(kube_gateway):
    kube_gateway.apply(manifests=[cluster_queue()])

    queue = kube_gateway.get(
        api_version="kueue.x-k8s.io/v1beta2", kind="ClusterQueue", name="acme", namespace="ignored"
    )

    assert queue["metadata"]["name"] == "acme"
    with pytest.raises(PermanentFleetError, match="namespace is required"):
        kube_gateway.apply(manifests=[{**inference_service("llm"), "metadata": {"name": "llm"}}])


def test_list_nodes_selects_gpu_nodes_by_their_feature_discovery_labels(
    kube_gateway, kube_emulator
):
    kube_emulator.put_object(node(RTX_NODE, GFD_LABELS))
    kube_emulator.put_object(node("cpu-1", {"kubernetes.io/os": "linux"}))

    gpu_nodes = kube_gateway.list_nodes(
        label_selector="nvidia.com/gpu.product=NVIDIA-RTX-4000-Ada-Generation"
    )
    all_nodes = kube_gateway.list_nodes()
    without_mig = kube_gateway.list_nodes(
        label_selector="nvidia.com/gpu.present,nvidia.com/mig.capable!=true"
    )

    assert [n["metadata"]["name"] for n in gpu_nodes] == [RTX_NODE]
    labels = gpu_nodes[0]["metadata"]["labels"]
    assert labels["nvidia.com/gpu.memory"] == "20475"
    assert labels["nvidia.com/gpu.count"] == "1"
    assert {n["metadata"]["name"] for n in all_nodes} == {RTX_NODE, "cpu-1"}
    assert [n["metadata"]["name"] for n in without_mig] == [RTX_NODE]
    assert gpu_nodes[0]["kind"] == "Node"


def test_cordon_is_a_merge_patch_of_the_node(kube_gateway, kube_emulator):
    kube_emulator.put_object(node(RTX_NODE, GFD_LABELS))

    patched = kube_gateway.patch_node(name=RTX_NODE, patch={"spec": {"unschedulable": True}})

    assert patched["spec"]["unschedulable"] is True
    stored = kube_emulator.get_object("v1", "Node", RTX_NODE)
    assert stored["spec"]["unschedulable"] is True
    assert stored["metadata"]["labels"] == GFD_LABELS
    (request,) = kube_emulator.requests("PATCH")
    assert request.path == f"/api/v1/nodes/{RTX_NODE}"
    assert request.content_type == "application/merge-patch+json"
    assert request.data == {"spec": {"unschedulable": True}}


def test_evict_pod_posts_a_policy_v1_eviction(kube_gateway, kube_emulator):
    kube_emulator.put_object(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-0", "namespace": "acme"}}
    )

    kube_gateway.evict_pod(name="train-0", namespace="acme")
    kube_gateway.evict_pod(name="train-0", namespace="acme")  # already gone: still fine

    evictions = kube_emulator.requests("POST", "/api/v1/namespaces/acme/pods/train-0/eviction")
    assert len(evictions) == 2
    assert evictions[0].data["apiVersion"] == "policy/v1"
    assert evictions[0].data["kind"] == "Eviction"
    assert evictions[0].data["metadata"] == {"name": "train-0", "namespace": "acme"}
    assert kube_emulator.get_object("v1", "Pod", "train-0", "acme") is None


def test_a_disruption_budget_refusing_eviction_is_transient(kube_gateway, kube_emulator):
    kube_emulator.put_object(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "serve-0", "namespace": "acme"}}
    )
    path = "/api/v1/namespaces/acme/pods/serve-0/eviction"
    kube_emulator.fail(
        429,
        method="POST",
        path=path,
        message="Cannot evict pod as it would violate the pod's disruption budget.",
    )

    with pytest.raises(TransientFleetError) as refused:
        kube_gateway.evict_pod(name="serve-0", namespace="acme")

    assert refused.value.status == 429
    assert "disruption budget" in refused.value.message
    assert kube_emulator.get_object("v1", "Pod", "serve-0", "acme") is not None


def test_an_unavailable_api_server_is_transient_and_heals(kube_gateway, kube_emulator):
    kube_gateway.apply(manifests=[namespace()])
    kube_emulator.fail(
        503, method="GET", path="/api/v1/namespaces/acme", message="etcdserver: leader changed"
    )

    with pytest.raises(TransientFleetError) as unavailable:
        kube_gateway.get(api_version="v1", kind="Namespace", name="acme")

    assert unavailable.value.status == 503
    assert unavailable.value.message == "etcdserver: leader changed"
    assert kube_gateway.get(api_version="v1", kind="Namespace", name="acme") is not None


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (422, 'ClusterQueue.kueue.x-k8s.io "acme" is invalid: spec.resourceGroups[0]'),
        (403, 'clusterqueues.kueue.x-k8s.io "acme" is forbidden: User cannot patch'),
    ],
)
def test_rejected_requests_are_permanent(kube_gateway, kube_emulator, status, message):
    kube_emulator.fail(
        status,
        method="PATCH",
        path="/apis/kueue.x-k8s.io/v1beta2/clusterqueues/acme",
        message=message,
    )

    with pytest.raises(PermanentFleetError) as rejected:
        kube_gateway.apply(manifests=[cluster_queue()])

    assert rejected.value.status == status
    assert rejected.value.message == message
    assert kube_emulator.get_object("kueue.x-k8s.io/v1beta2", "ClusterQueue", "acme") is None


def test_apply_stops_at_the_first_failing_manifest(kube_gateway, kube_emulator):
    kube_emulator.fail(422, method="PATCH", path="/apis/kueue.x-k8s.io/v1beta2/clusterqueues/acme")

    with pytest.raises(PermanentFleetError):
        kube_gateway.apply(manifests=[namespace(), cluster_queue(), inference_service("llm")])

    assert kube_emulator.get_object("v1", "Namespace", "acme") is not None
    assert (
        kube_emulator.requests(
            "PATCH", "/apis/serving.kserve.io/v1beta1/namespaces/acme/inferenceservices/llm"
        )
        == []
    )


def test_a_slow_api_server_times_out_as_transient(kube_gateway, kube_emulator):
    kube_gateway.apply(manifests=[namespace()])
    kube_gateway.request_timeout = 0.2
    kube_emulator.delay(1.5, method="GET", path="/api/v1/namespaces/acme")

    started = time.monotonic()
    with pytest.raises(TransientFleetError, match="timed out"):
        kube_gateway.get(api_version="v1", kind="Namespace", name="acme")

    assert time.monotonic() - started < 1.0


def test_an_unknown_kind_is_permanent(kube_gateway):
    with pytest.raises(PermanentFleetError, match="no such kind"):
        kube_gateway.list(api_version="example.com/v1", kind="Widget")


def test_an_unreachable_api_server_is_transient(kube_emulator, tmp_path):
    api_client = kube_emulator.api_client()
    api_client.configuration.host = "http://127.0.0.1:9"  # discard port: nothing listens
    gateway = KubernetesFleetGateway(
        api_client=api_client,
        request_timeout=1.0,
        discovery_cache_file=str(tmp_path / "discovery.json"),
    )

    with pytest.raises(TransientFleetError):
        gateway.list_nodes()


def test_get_gateway_builds_the_kubernetes_backend_from_a_kubeconfig(
    kube_emulator, settings, tmp_path, db
):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "emulated", "cluster": {"server": kube_emulator.url}}],
                "users": [{"name": "portal", "user": {"token": "t0ken"}}],
                "contexts": [
                    {"name": "fleet", "context": {"cluster": "emulated", "user": "portal"}}
                ],
                "current-context": "fleet",
            }
        )
    )
    kube_emulator.put_object(node(RTX_NODE, GFD_LABELS))
    settings.FLEET_BACKEND = "kubernetes"
    settings.FLEET_KUBECONFIG = str(kubeconfig)
    settings.FLEET_KUBE_CONTEXT = "fleet"

    gateway = get_gateway("main")

    assert isinstance(gateway.inner, KubernetesFleetGateway)
    assert get_gateway("main").inner is gateway.inner
    assert [n["metadata"]["name"] for n in gateway.list_nodes()] == [RTX_NODE]
    assert gateway.api_client.configuration.host == kube_emulator.url
    assert kube_emulator.requests("GET", "/api/v1/nodes")


@pytest.mark.parametrize(
    ("exc", "expected", "status"),
    [
        (ApiException(status=429, reason="Too Many Requests"), TransientFleetError, 429),
        (ApiException(status=500, reason="Internal Server Error"), TransientFleetError, 500),
        (ApiException(status=504, reason="Gateway Timeout"), TransientFleetError, 504),
        (ApiException(status=400, reason="Bad Request"), PermanentFleetError, 400),
        (ApiException(status=404, reason="Not Found"), PermanentFleetError, 404),
        (ConnectionRefusedError("refused"), TransientFleetError, None),
        (TimeoutError("slow"), TransientFleetError, None),
        (ValueError("Namespace is required"), PermanentFleetError, None),
    ],
)
def test_classify_separates_what_heals_from_what_does_not(exc, expected, status):
    classified = classify(exc)

    assert type(classified) is expected
    assert classified.status == status


def _pending_workload(name: str, priority: int, ns: str = "acme") -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"queueName": "default", "priority": priority, "podSets": [{
            "name": "main", "count": 1,
            "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}]},
    }


def test_pending_workloads_reads_one_page_of_a_local_queue_in_queue_order(
    kube_gateway, kube_emulator
):
    for name, priority in (("low", 1), ("high", 100), ("mid", 50)):
        kube_emulator.put_object(_pending_workload(name, priority))

    first = kube_gateway.pending_workloads(namespace="acme", local_queue="default", limit=2,
                                           offset=0)
    rest = kube_gateway.pending_workloads(namespace="acme", local_queue="default", limit=2,
                                          offset=2)

    assert [(w["metadata"]["name"], w["positionInLocalQueue"]) for w in first + rest] == [
        ("high", 0), ("mid", 1), ("low", 2)]
    (request,) = [r for r in kube_emulator.requests("GET") if r.path.endswith(
        "/namespaces/acme/localqueues/default/pendingworkloads") and r.params["offset"] == "2"]
    assert request.path.startswith("/apis/visibility.kueue.x-k8s.io/v1beta2/")
    assert request.params["limit"] == "2"


@pytest.mark.parametrize(("status", "error"), [
    (404, PermanentFleetError), (403, PermanentFleetError), (503, TransientFleetError)])
def test_a_visibility_api_not_served_is_a_fleet_error(kube_gateway, kube_emulator, status,
                                                      error):
    kube_emulator.fail(status, method="GET",
                       path="/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/acme"
                            "/localqueues/default/pendingworkloads")
    with pytest.raises(error) as caught:
        kube_gateway.pending_workloads(namespace="acme", local_queue="default", limit=10,
                                       offset=0)
    assert caught.value.status == status
