"""Node and Pod objects as a GPU cluster's API server holds them, built from real GFD labels.

The RTX 4000 Ada node carries the real label set of a GPU Operator node. The MIG nodes start
from it and change what GPU Feature Discovery changes for an A100/H100 with MIG `mixed` or
`single` (checked against GFD's own expected-output regexes in test_node_labels.py). The HAMi
node is an 8x L40S node as HAMi v2.10 leaves it (tests/data/hami/README.md); `hami_node`
derives others from it.
"""

import copy
import json
import re
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "nvidia"
RTX_LABELS: dict[str, str] = json.loads((DATA / "node-labels-sample-rtx4000ada.json").read_text())
RTX_NODE = RTX_LABELS["kubernetes.io/hostname"]
HAMI_NODE: dict = json.loads(
    (DATA.parent / "hami" / "node-l40s-hami.json").read_text()
)
REGISTER = "hami.io/node-nvidia-register"


def gfd_patterns(name: str) -> list[re.Pattern[str]]:
    lines = (DATA / name).read_text().splitlines()
    return [re.compile(line) for line in lines if line.strip()]


def _with_host(labels: dict[str, str], hostname: str) -> dict[str, str]:
    return {**labels, "kubernetes.io/hostname": hostname}


def mig_mixed_labels(hostname: str) -> dict[str, str]:
    """An 8x A100 80GB node, MIG `mixed`: two GPUs partitioned 7x 1g.10gb, six whole."""
    labels = {k: v for k, v in RTX_LABELS.items() if not k.startswith("nvidia.com/mig")}
    labels |= {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "81920",
        "nvidia.com/gpu.family": "ampere",
        "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.machine": "DGXA100-920-23687-2530-000",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.clique": "7b968a6d-c8aa-45e1-9e07-e1e51be99c31.1",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "mixed",
    }
    profile = "nvidia.com/mig-1g.10gb"
    labels |= {
        f"{profile}.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
        f"{profile}.count": "14",
        f"{profile}.replicas": "1",
        f"{profile}.sharing-strategy": "none",
        f"{profile}.memory": "9728",
        f"{profile}.multiprocessors": "14",
        f"{profile}.engines.copy": "1",
        f"{profile}.engines.decoder": "0",
        f"{profile}.engines.encoder": "0",
        f"{profile}.engines.jpeg": "0",
        f"{profile}.engines.ofa": "0",
        f"{profile}.slices.gi": "1",
        f"{profile}.slices.ci": "1",
    }
    return _with_host(labels, hostname)


def mig_single_labels(hostname: str) -> dict[str, str]:
    """An 8x H100 80GB node, MIG `single`: every GPU 7x 1g.10gb, so gpu.count counts 56 MIGs."""
    labels = {k: v for k, v in RTX_LABELS.items() if not k.startswith("nvidia.com/mig")}
    labels |= {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
        "nvidia.com/gpu.count": "56",
        "nvidia.com/gpu.memory": "9856",
        "nvidia.com/gpu.family": "hopper",
        "nvidia.com/gpu.compute.major": "9",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.multiprocessors": "16",
        "nvidia.com/gpu.slices.gi": "1",
        "nvidia.com/gpu.slices.ci": "1",
        "nvidia.com/gpu.engines.copy": "1",
        "nvidia.com/gpu.engines.decoder": "1",
        "nvidia.com/gpu.engines.encoder": "0",
        "nvidia.com/gpu.engines.jpeg": "1",
        "nvidia.com/gpu.engines.ofa": "0",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "single",
    }
    return _with_host(labels, hostname)


def plain_labels(hostname: str, *, product: str, count: int, memory_mib: int) -> dict[str, str]:
    """The real label set with another product (no MIG), e.g. an 8x L40S node."""
    return _with_host(
        RTX_LABELS
        | {
            "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.count": str(count),
            "nvidia.com/gpu.memory": str(memory_mib),
        },
        hostname,
    )


def node(
    name: str,
    labels: dict[str, str],
    *,
    gpus: int | None = None,
    mig: dict[str, int] | None = None,
    cpu: str = "128",
    memory: str = "1056706780Ki",
    ready: bool = True,
    unschedulable: bool = False,
) -> dict:
    capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus is not None:
        capacity["nvidia.com/gpu"] = str(gpus)
    for profile, count in (mig or {}).items():
        capacity[f"nvidia.com/mig-{profile}"] = str(count)
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status"
                    if ready
                    else "container runtime network not ready",
                }
            ],
        },
    }
    return body


def pod(
    name: str,
    namespace: str,
    node_name: str,
    *,
    gpus: int = 0,
    mig: dict[str, int] | None = None,
    daemon_set: bool = False,
    phase: str = "Running",
) -> dict:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    for profile, count in (mig or {}).items():
        limits[f"nvidia.com/mig-{profile}"] = str(count)
    metadata: dict = {"name": name, "namespace": namespace}
    if daemon_set:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "dcgm-exporter", "uid": "x"}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "main", "image": "busybox", "resources": {"limits": limits}}],
        },
        "status": {"phase": phase},
    }


def hami_register(*, gpus: int, devmem: int, gpu_type: str, unhealthy: tuple[int, ...] = ()) -> str:
    """A register annotation as HAMi v2.10's json.Marshal writes it (omitempty zero values)."""
    items = []
    for index in range(gpus):
        item: dict = {"id": f"GPU-{index:08x}-aaaa-bbbb-cccc-{gpus:012x}"}
        if index:
            item["index"] = index
        item |= {"count": 10, "devmem": devmem, "devcore": 100, "type": gpu_type,
                 "mode": "hami-core"}
        if index not in unhealthy:
            item["health"] = True
        items.append(item)
    return json.dumps(items, separators=(",", ":"))


def hami_node(
    name: str,
    *,
    register: str | None = "fixture",
    labelled: bool = True,
    gfd_labels: dict[str, str] | None = None,
    ready: bool = True,
) -> dict:
    """The HAMi fixture node renamed; `register=None` drops the annotation (the device plugin
    has not registered yet), a string other than "fixture" replaces it; `gfd_labels` adds GPU
    Feature Discovery's labels (GFD running beside HAMi)."""
    body = copy.deepcopy(HAMI_NODE)
    meta = body["metadata"]
    meta["name"] = name
    meta["labels"]["kubernetes.io/hostname"] = name
    if not labelled:
        del meta["labels"]["gpu"]
    if gfd_labels:
        meta["labels"] |= gfd_labels
    if register is None:
        del meta["annotations"][REGISTER]
    elif register != "fixture":
        meta["annotations"][REGISTER] = register
    if not ready:
        body["status"]["conditions"][0] |= {"status": "False", "reason": "KubeletNotReady"}
    return body


def hami_pod(
    name: str,
    namespace: str,
    node_name: str,
    *,
    vgpus: int = 1,
    gpumem: int | None = None,
    gpumem_percentage: int | None = None,
    gpucores: int | None = None,
) -> dict:
    """A pod asking HAMi for `vgpus` vGPUs, each of `gpumem` MiB (or a percentage of the GPU's
    memory; neither: all of it) and `gpucores` percent, like HAMi's examples/nvidia pods."""
    body = pod(name, namespace, node_name, gpus=vgpus)
    limits = body["spec"]["containers"][0]["resources"]["limits"]
    for key, value in (("nvidia.com/gpumem", gpumem),
                       ("nvidia.com/gpumem-percentage", gpumem_percentage),
                       ("nvidia.com/gpucores", gpucores)):
        if value is not None:
            limits[key] = value
    body["spec"]["schedulerName"] = "hami-scheduler"
    return body
