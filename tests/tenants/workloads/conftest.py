"""Fixtures of the workload tests: a GPU pool, quota, launches, and controllers to play."""

import pytest

from tests.factories import GPUFactory, NodeFactory, QuotaFactory

H100 = "gpu:nvidia-h100-80gb"
INFERENCE_SPEC = {
    "model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct",
    "gpu": H100,
    "gpus_per_replica": 1,
    "min_replicas": 1,
    "max_replicas": 2,
}


@pytest.fixture
def gpu_pool(db):
    """The shared pool: two nodes of 8 H100s each."""
    nodes = [NodeFactory(reserved_for="") for _ in range(2)]
    for node in nodes:
        for index in range(8):
            GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    return nodes


@pytest.fixture
def workload_quota(tenant):
    """Enough quota for a few endpoints and vClusters: 4 H100s, 32 vCPUs, 256 GiB, 100 GiB."""

    def _quota(**limits):
        defaults = {
            H100: 4, "cpu": 32, "memory-gib": 256, "storage-gib": 100,
            "count:inference": 3, "count:vcluster": 2, "count:vm": 2, "count:slurm": 1,
        }
        for resource, limit in (defaults | limits).items():
            QuotaFactory(tenant=tenant, resource=resource, limit=limit)

    return _quota


def ready_inference_service(kube_emulator, *, name: str, namespace: str) -> None:
    """Play KServe: the predictor is up and the endpoint has its URL."""
    kube_emulator.patch_object(
        "serving.kserve.io/v1beta1", "InferenceService", name, namespace,
        patch={
            "status": {
                "observedGeneration": 1,
                "url": f"https://{name}.{namespace}.example.com",
                "address": {"url": f"http://{name}.{namespace}.svc.cluster.local"},
                "conditions": [
                    {"type": "IngressReady", "status": "True"},
                    {"type": "PredictorReady", "status": "True"},
                    {"type": "Ready", "status": "True"},
                ],
                "modelStatus": {"states": {"activeModelState": "Loaded",
                                           "targetModelState": "Loaded"},
                                "transitionStatus": "UpToDate"},
            }
        },
    )


VCLUSTER_SPEC = {"kubernetes_version": "1.35", "cpu": 2, "memory_gib": 4}


def ready_helm_release(kube_emulator, *, name: str, namespace: str, server: str) -> None:
    """Play Flux and the vcluster chart: the release is installed, the kubeconfig Secret and
    the control plane StatefulSet exist."""
    import base64

    kube_emulator.patch_object(
        "helm.toolkit.fluxcd.io/v2", "HelmRelease", name, namespace,
        patch={"status": {
            "observedGeneration": 1,
            "lastAttemptedRevision": "0.36.1",
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "InstallSucceeded",
                 "message": "Helm install succeeded for release", "observedGeneration": 1,
                 "lastTransitionTime": "2026-12-01T10:00:00Z"},
                {"type": "Released", "status": "True", "reason": "InstallSucceeded",
                 "message": "Helm install succeeded", "observedGeneration": 1,
                 "lastTransitionTime": "2026-12-01T10:00:00Z"},
            ],
            "history": [{"chartName": "vcluster", "chartVersion": "0.36.1", "version": 1,
                         "status": "deployed", "name": name, "namespace": namespace,
                         "digest": "sha256:1f0c", "configDigest": "sha256:9ab2",
                         "firstDeployed": "2026-12-01T10:00:00Z",
                         "lastDeployed": "2026-12-01T10:00:00Z"}],
        }},
    )
    kubeconfig = (
        "apiVersion: v1\nkind: Config\nclusters:\n- name: vc\n  cluster:\n"
        f"    server: {server}\ncontexts:\n- name: vc\n  context: {{cluster: vc, user: vc}}\n"
        "current-context: vc\nusers:\n- name: vc\n  user: {token: x}\n"
    )
    kube_emulator.put_object({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": f"vc-{name}", "namespace": namespace,
                     "labels": {"app": "vcluster", "vcluster-name": name}},
        "data": {"config": base64.b64encode(kubeconfig.encode()).decode()},
    })
    kube_emulator.put_object({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "vcluster"}},
                 "serviceName": name, "template": {"metadata": {"labels": {"app": "vcluster"}},
                                                   "spec": {"containers": []}}},
        "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
    })


def ssh_public_key() -> str:
    """A real OpenSSH ed25519 public key, made for the test."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate().public_key()
    raw = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return raw.decode() + " tester@laptop"


VM_SPEC = {
    "custom_image": "quay.io/containerdisks/ubuntu:24.04", "default_user": "ubuntu",
    "cpu": 4, "memory_gib": 16, "disk_gib": 40, "gpu": H100, "gpus": 1, "running": True,
}
SLURM_SPEC = {"workers": 2, "gpu": H100, "gpus_per_worker": 1, "cpu_per_worker": 4,
              "memory_gib_per_worker": 16}


def run_vm(kube_emulator, *, name: str, namespace: str, ip: str = "10.244.3.17",
           running: bool = True) -> None:
    """Play KubeVirt: the VM runs (or is stopped), its VMI has an address."""
    vm = kube_emulator.get_object("kubevirt.io/v1", "VirtualMachine", name, namespace)
    template = vm["spec"]["template"]
    if not running:
        kube_emulator.patch_object("kubevirt.io/v1", "VirtualMachine", name, namespace,
                                   patch={"status": {"printableStatus": "Stopped",
                                                     "conditions": []}})
        return
    kube_emulator.patch_object("kubevirt.io/v1", "VirtualMachine", name, namespace, patch={
        "status": {"printableStatus": "Running", "ready": True, "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-01T10:00:00Z"}]}})
    kube_emulator.put_object({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": dict(template["metadata"]["labels"]),
                     "annotations": dict(template["metadata"].get("annotations") or {}),
                     "ownerReferences": [{"apiVersion": "kubevirt.io/v1",
                                          "kind": "VirtualMachine", "name": name,
                                          "uid": vm["metadata"]["uid"], "controller": True}]},
        "spec": {"domain": {"devices": {}}},
        "status": {"phase": "Running", "nodeName": "gpu-node-0001",
                   "interfaces": [{"name": "default", "ipAddress": ip}]},
    })


def run_slurm(kube_emulator, *, ctx_name: str, namespace: str, workers: int, labels: dict) -> None:
    """Play the Slinky operator: slurmctld's StatefulSet and the login Deployment run, the
    NodeSet reports its workers ready."""
    base = ctx_name
    for kind, name in (("StatefulSet", f"{base}-controller"), ("Deployment", f"{base}-login")):
        kube_emulator.put_object({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": []}}},
            "status": {"replicas": 1, "readyReplicas": 1},
        })
    nodeset = kube_emulator.get_object("slinky.slurm.net/v1beta1", "NodeSet", f"{base}-workers",
                                       namespace)
    kube_emulator.patch_object("slinky.slurm.net/v1beta1", "NodeSet", f"{base}-workers",
                               namespace, patch={"status": {
                                   "replicas": workers, "readyReplicas": workers,
                                   "observedGeneration": nodeset["metadata"].get("generation"),
                                   "slurmIdle": workers, "nodeSetHash": "5d8f7c6b9",
                                   "selector": f"app.kubernetes.io/instance={base}-workers"}})


def observed(workload):
    """The workload after one look at its objects (the observe task's service, run here)."""
    from tenants.workloads import services

    services.workload_observe(workload_id=workload.pk)
    workload.refresh_from_db()
    return workload
