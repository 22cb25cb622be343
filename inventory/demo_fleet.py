"""The demo fleet's details: BIOS profiles, BMCs, NICs, topology, health history, and the
simulated cluster's Node and Pod objects, so that every fleet page has something to show.
Four L40S nodes share their GPUs through HAMi: labelled `gpu=on` and registered in HAMi's
annotation (no GPU Feature Discovery labels there: HAMi's device plugin replaced NVIDIA's).

Deterministic and idempotent: details are added only where missing, and the simulated objects
are applied (server-side apply semantics: a second apply changes nothing).
"""

import json
import uuid

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.fleet import get_gateway

from . import resource_classes
from .models import GPU, NIC, BiosProfile, HealthEvent, Node, NodeState, NodeValidation
from .node_labels import MIG_COMPUTE_SLICES, RESERVED_FOR_KEY, reservation_patch
from .services.sync import cluster_sync

NAMESPACE = uuid.UUID("8d4c8f7e-6a1b-4c3e-9f0d-2b7a5e1c9d40")
IB_RAILS = 8
HAMI_NODES = frozenset({33, 34, 35, 36})  # L40S nodes whose GPUs HAMi shares
HAMI_DEVMEM_MIB = {"nvidia-l40s": 46068}  # what NVML reports, as HAMi registers it


def _hex(seed: str, digits: int) -> str:
    return uuid.uuid5(NAMESPACE, seed).hex[:digits]


def _details(node: Node, number: int) -> None:
    model = node.gpus.first().model if node.gpus.exists() else ""
    node.bios_profile = (
        BiosProfile.CONFIDENTIAL_COMPUTE
        if node.reserved_for
        else BiosProfile.PERFORMANCE
        if model in ("nvidia-h200", "nvidia-h100-80gb")
        else BiosProfile.BASELINE
    )
    node.bmc_address = f"10.254.{number // 200}.{number % 200 + 10}"
    node.height_units = 4
    node.save(update_fields=["bios_profile", "bmc_address", "height_units"])
    nvlink = model in ("nvidia-h200", "nvidia-h100-80gb", "nvidia-a100-80gb")
    gpus = list(node.gpus.order_by("index"))
    for gpu in gpus:
        gpu.numa_node = gpu.index // 4
        gpu.pci_bus_id = f"00000000:{0x18 + 0x10 * gpu.index:02X}:00.0"
        gpu.nvlink_domain = f"{node.hostname}-nvswitch" if nvlink else ""
    GPU.objects.bulk_update(gpus, ["numa_node", "pci_bus_id", "nvlink_domain"])
    nics = [
        NIC(node=node, name=f"mlx5_{rail}", kind=NIC.Kind.INFINIBAND,
            ib_guid=":".join(_hex(f"{node.hostname}/ib{rail}", 16)[i:i + 4] for i in (0, 4, 8, 12)),
            link_speed_gbps=400, fabric="ib-compute", rail=rail, numa_node=rail // 4)
        for rail in range(IB_RAILS if nvlink else 2)
    ]
    nics += [
        NIC(node=node, name=name, kind=NIC.Kind.ETHERNET,
            mac_address=":".join(_hex(f"{node.hostname}/{name}", 12)[i:i + 2]
                                 for i in range(0, 12, 2)),
            link_speed_gbps=speed, fabric=fabric, numa_node=0)
        for name, speed, fabric in (("eth0", 200, "storage"), ("eth1", 25, "management"))
    ]
    NIC.objects.bulk_create(nics)


def _history(nodes: dict[int, Node]) -> None:
    """A few health events and validation results, once."""
    if HealthEvent.objects.exists():
        return
    now = timezone.now()
    hours = timezone.timedelta(hours=1)
    events = [
        (7, "nvlink-errors", "gpu:5", "warning", "42 NVLink errors", "cordon", None),
        (23, "thermal-violation", "gpu:3", "warning",
         "Thermally throttled for 96.0 s in the last 10 min", "cordon", None),
        (31, "xid", "gpu:6", "critical", "XID 79: GPU has fallen off the bus", "drain", None),
        (12, "power-violation", "gpu:1", "info", "Power throttled for 4.2 s in the last 10 min",
         "none", None),
        (15, "ecc-dbe", "gpu:2", "critical", "1 uncorrectable (double-bit) ECC errors", "drain",
         "GPU replaced (RMA 4711), burn-in passed"),
    ]
    for number, kind, subject, severity, detail, remediation, resolution in events:
        node = nodes.get(number)
        if node is None:
            continue
        gpu = node.gpus.filter(index=int(subject.split(":")[1])).first()
        opened = now - (30 if resolution else 3) * hours
        HealthEvent.objects.create(
            node=node, gpu=gpu, kind=kind, subject=subject, severity=severity, detail=detail,
            source=HealthEvent.Source.DCGM, opened_at=opened, last_seen_at=opened + hours,
            remediation=remediation, resolved_at=opened + 20 * hours if resolution else None,
            resolution=resolution or "", value=79 if kind == "xid" else None,
            notified_tenants=[node.reserved_for] if node.reserved_for and remediation != "none"
            else [],
        )
    if 31 in nodes:
        GPU.objects.filter(node=nodes[31], index=6).update(health=GPU.Health.FAILED)
    if 40 in nodes and nodes[40].state == NodeState.VALIDATING:
        NodeValidation.objects.create(
            node=nodes[40], kind=NodeValidation.Kind.BURN_IN, passed=True,
            summary="24 h gpu-burn and DCGM diag level 3: no errors",
            metrics={"duration_h": 24, "dcgm_diag_level": 3},
        )


def _hami_register(gpus: list[GPU], model: resource_classes.GpuModel) -> str:
    """The annotation HAMi v2.10's device plugin writes (json.Marshal, zero values left out)."""
    devices = []
    for gpu in gpus:
        device: dict = {"id": gpu.uuid or f"GPU-{gpu.node_id}-{gpu.index}"}
        if gpu.index:
            device["index"] = gpu.index
        device |= {"count": 10, "devmem": HAMI_DEVMEM_MIB.get(model.key, model.memory_gib * 1024),
                   "devcore": 100, "type": model.hami_type}
        if gpu.numa_node:
            device["numa"] = gpu.numa_node
        device |= {"mode": "hami-core", "health": True}
        devices.append(device)
    return json.dumps(devices, separators=(",", ":"))


def _node_object(node: Node, *, hami: bool = False) -> dict:
    gpus = list(node.gpus.all())
    model = resource_classes.GPU_MODELS.get(gpus[0].model) if gpus else None
    labels = {"kubernetes.io/hostname": node.k8s_name, "kubernetes.io/os": "linux",
              "topology.kubernetes.io/zone": node.rack.site.slug if node.rack else ""}
    if model and hami:
        # HAMi's node label, and GPU Feature Discovery's product label: what Kueue's hami-<model>
        # flavor and an endpoint's node selector pick the model's shared nodes by.
        key, value = resource_classes.HAMI_NODE_LABEL
        labels |= {key: value, resource_classes.GPU_PRODUCT_LABEL: model.product_label}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": node.k8s_name, "labels": _reserved(node, labels),
            "annotations": {resource_classes.HAMI_REGISTER_ANNOTATION: _hami_register(gpus, model)},
        }, "spec": _node_spec(node)}
    if model:
        layouts = [g.mig_layout for g in gpus if g.mig_layout]
        labels |= {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": model.product_label,
            "nvidia.com/gpu.count": str(len(gpus)),
            "nvidia.com/gpu.memory": str(model.memory_gib * 1024),
            "nvidia.com/mig.capable": "true" if model.mig_capable else "false",
            "nvidia.com/mig.strategy": "mixed" if model.mig_capable else "none",
            "nvidia.com/cuda.driver-version.full": "580.95.05",
        }
        if gpus[0].nvlink_domain:
            labels["nvidia.com/gpu.clique"] = gpus[0].nvlink_domain
        counts: dict[str, int] = {}
        for layout in layouts:
            for profile in layout:
                counts[profile] = counts.get(profile, 0) + 1
        for profile, count in counts.items():
            labels[f"nvidia.com/mig-{profile}.count"] = str(count)
    status = {}
    if model and not any(g.mig_layout for g in gpus):
        # The device plugin offers the healthy GPUs only.
        healthy = sum(g.health != GPU.Health.FAILED for g in gpus)
        status = {"allocatable": {"nvidia.com/gpu": str(healthy)}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.k8s_name,
                                                             "labels": _reserved(node, labels)},
            "spec": _node_spec(node), **({"status": status} if status else {})}


def _node_spec(node: Node) -> dict:
    spec = {"unschedulable": True} if node.state not in (
        NodeState.AVAILABLE, NodeState.DISCOVERED, NodeState.VALIDATING) else {}
    if node.reserved_for:  # as the portal's reservation leaves it (node_reservation_reconcile)
        spec["taints"] = reservation_patch(
            reserved_for=node.reserved_for, observed_label="", taints=[]
        )["spec"]["taints"]
    return spec


def _reserved(node: Node, labels: dict) -> dict:
    return labels | ({RESERVED_FOR_KEY: node.reserved_for} if node.reserved_for else {})


def _pod(name: str, namespace: str, node: str, *, gpus: int = 0, mig: str = "",
         hami: tuple[int, int] | None = None) -> dict:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {f"nvidia.com/mig-{mig}": "1"}
    if hami:  # one vGPU: MiB of its memory, percent of its compute
        limits = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": str(hami[0]),
                  "nvidia.com/gpucores": str(hami[1])}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node, "containers": [
            {"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
             "resources": {"limits": limits, "requests": limits}}]},
    }


def _simulated_cluster(nodes: dict[int, Node]) -> None:
    """The cluster the simulated fleet shows: every node, and a few tenants' pods on them."""
    pods = []
    for number in (1, 2):
        if number in nodes:
            pods.append(_pod(f"helix-train-{number}", "tenant-helix", nodes[number].k8s_name,
                             gpus=8))
    for number in (10, 11):
        if number in nodes:
            pods.append(_pod(f"nova-vllm-{number}", "tenant-nova", nodes[number].k8s_name,
                             gpus=2))
    mig_nodes = [n for n in nodes.values() if any(g.mig_layout for g in n.gpus.all())]
    for i, node in enumerate(mig_nodes[:1]):
        pods += [_pod(f"atlas-eval-{i}-{j}", "tenant-atlas", node.k8s_name, mig="1g.10gb")
                 for j in range(min(5, MIG_COMPUTE_SLICES))]
    hami_nodes = sorted(HAMI_NODES & set(nodes))
    if hami_nodes:
        shared = nodes[hami_nodes[0]].k8s_name
        pods += [_pod("nova-rerank-0", "tenant-nova", shared, hami=(12288, 25)),
                 _pod("nova-rerank-1", "tenant-nova", shared, hami=(12288, 25)),
                 _pod("nova-notebook-0", "tenant-nova", shared, hami=(8192, 10))]
    # Only what is not there yet: a second `make demo` leaves each cluster (and what the sync
    # already settled on it, such as reserved nodes' labels and taints) as it is.
    cluster_of = {n.k8s_name: n.cluster_id for n in nodes.values()}
    wanted = [_node_object(n, hami=number in HAMI_NODES) for number, n in nodes.items()] + pods
    for cluster in sorted(set(cluster_of.values())):
        gateway = get_gateway(cluster)
        there = {
            (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            for obj in gateway.list_nodes() + gateway.list(api_version="v1", kind="Pod")
        }
        missing = [
            obj for obj in wanted
            if cluster_of[obj["metadata"]["name"] if obj["kind"] == "Node"
                          else obj["spec"]["nodeName"]] == cluster
            and (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            not in there
        ]
        if missing:
            gateway.apply(manifests=missing)


def demo_fleet_details(*, numbered: dict[int, Node]) -> None:
    """Fill the demo fleet's details where missing, and (simulated backend) its cluster."""
    with transaction.atomic():
        for number, node in numbered.items():
            if not node.nics.exists():
                _details(node, number)
        _history(numbered)
    if settings.FLEET_BACKEND == "simulated":
        _simulated_cluster(numbered)
        for cluster in sorted({node.cluster_id for node in numbered.values()}):
            cluster_sync(cluster=cluster)
