"""How the provisioning measurement counts what the portal asked of the cluster."""

from bench.provisioning import count_requests
from tests.support.kube_emulator import SeenRequest

NS = "/namespaces/tenant-acme"
APPLY = "application/apply-patch+yaml"


def _seen(method: str, path: str, content_type: str = "", data=None) -> SeenRequest:
    return SeenRequest(method=method, path=path, params={}, content_type=content_type, data=data)


def test_requests_are_counted_by_verb_and_resource_and_owned_objects_once_each():
    requests, owned = count_requests([
        _seen("GET", "/api"),
        _seen("GET", "/apis"),
        _seen("GET", "/apis/serving.kserve.io/v1beta1"),
        _seen("PATCH", f"/apis/serving.kserve.io/v1beta1{NS}/inferenceservices/chat", APPLY),
        _seen("PATCH", f"/apis/serving.kserve.io/v1beta1{NS}/inferenceservices/chat", APPLY),
        _seen("GET", f"/apis/serving.kserve.io/v1beta1{NS}/inferenceservices"),
        _seen("POST", f"/api/v1{NS}/secrets", data={"metadata": {"name": "hpc-slurm-key"}}),
        _seen("GET", f"/api/v1{NS}/secrets/vc-dev"),
        _seen("GET", "/api/v1/secrets"),
        _seen("GET", "/api/v1/namespaces/tenant-acme"),
        _seen("DELETE", f"/apis/kubevirt.io/v1{NS}/virtualmachineinstances/box"),
        _seen("PATCH", "/api/v1/nodes/gpu-1", "application/merge-patch+json"),
    ])
    assert requests == {
        "discovery": 3, "apply inferenceservices": 2, "list inferenceservices": 1,
        "create secrets": 1, "get secrets": 1, "list secrets": 1, "get namespaces": 1,
        "delete virtualmachineinstances": 1, "patch nodes": 1,
    }
    # Applied twice, one object; created ones count too.
    assert owned == {"inferenceservices": 1, "secrets": 1}
