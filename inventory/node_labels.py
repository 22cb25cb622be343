"""Read a Kubernetes Node object the way the inventory needs it.

GPU Feature Discovery / GPU Operator labels name the GPU model, count, memory and MIG set-up;
`status.capacity` carries the extended resources (`nvidia.com/gpu`, `nvidia.com/mig-<profile>`);
`status.conditions` and `spec.unschedulable` say whether the node is ready and cordoned.
A node that shares its GPUs through HAMi carries HAMi's label (`gpu=on`, where its device plugin
runs) and, once that plugin has registered the GPUs, the `hami.io/node-nvidia-register`
annotation (`parse_hami_register`).
Pure functions (no ORM, no I/O).
"""

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from . import resource_classes
from .resource_classes import GpuModel

LABEL = "nvidia.com/"
MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES = 7, 8  # per GPU on A100, H100 and H200
KEPT_LABEL_PREFIXES = (
    "nvidia.com/",
    "topology.kubernetes.io/",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/hostname",
    "feature.node.kubernetes.io/rdma",
)
_MIG_COUNT_LABEL = re.compile(r"^nvidia\.com/mig-(?P<profile>\d+g\.\d+gb)\.count$")
_MIG_CAPACITY = re.compile(r"^nvidia\.com/mig-(?P<profile>\d+g\.\d+gb)$")


# Label and NoSchedule taint on the nodes reserved for one dedicated tenant; tenants' Kueue
# flavors and pod templates select and tolerate it.
RESERVED_FOR_KEY = "portal.ai-factory.io/reserved-for"


def reservation_patch(
    *, reserved_for: str, observed_label: str, taints: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The Node merge patch that makes its reservation label and taint say `reserved_for`
    (empty: not reserved), keeping every other taint; None when the node already agrees."""
    others = [t for t in taints if t.get("key") != RESERVED_FOR_KEY]
    wanted_taints = others + (
        [{"key": RESERVED_FOR_KEY, "value": reserved_for, "effect": "NoSchedule"}]
        if reserved_for else []
    )
    if observed_label == reserved_for and taints == wanted_taints:
        return None
    return {
        "metadata": {"labels": {RESERVED_FOR_KEY: reserved_for or None}},
        "spec": {"taints": wanted_taints or None},
    }


class HamiRegisterError(ValueError):
    """The register annotation is in neither of the formats HAMi writes."""


@dataclass(frozen=True)
class HamiDevice:
    """One GPU as HAMi's device plugin registered it on the node."""

    uuid: str
    index: int
    count: int  # vGPUs it may be split into (deviceSplitCount)
    memory_mib: int  # what HAMi schedules against (deviceMemoryScaling applied)
    cores: int  # percent of its compute (100, or deviceCoreScaling * 100)
    type: str  # the NVML name, e.g. "NVIDIA H100 80GB HBM3"
    health: bool
    mode: str = "hami-core"  # hami-core | mig | mps

    def as_record(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid, "index": self.index, "count": self.count,
            "memory_mib": self.memory_mib, "cores": self.cores, "type": self.type,
            "health": self.health, "mode": self.mode,
        }


def _hami_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise HamiRegisterError(f"{what} is not a number: {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise HamiRegisterError(f"{what} is not a number: {value!r}") from None
    if number < 0:
        raise HamiRegisterError(f"{what} is negative: {number}")
    return number


def _hami_json_devices(items: Any) -> list[HamiDevice]:
    if not isinstance(items, list):
        raise HamiRegisterError("the register annotation is not a list of devices")
    devices = []
    for position, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            raise HamiRegisterError(f"device {position} has no id")
        health = item.get("health", False)
        if not isinstance(health, bool):
            raise HamiRegisterError(f"device {position} health is not true or false")
        devices.append(HamiDevice(
            uuid=item["id"],
            # Go's encoder leaves out zero values (`omitempty`): index 0, count 0, health false.
            index=_hami_int(item.get("index", 0), "index"),
            count=_hami_int(item.get("count", 0), "count"),
            memory_mib=_hami_int(item.get("devmem", 0), "devmem"),
            cores=_hami_int(item.get("devcore", 0), "devcore"),
            type=str(item.get("type") or ""),
            health=health,
            mode=str(item.get("mode") or "hami-core"),
        ))
    return devices


def _hami_legacy_devices(text: str) -> list[HamiDevice]:
    if ":" not in text:
        raise HamiRegisterError("the register annotation has no device separator")
    devices = []
    for segment in text.split(":"):
        if not segment:
            continue
        items = segment.split(",")
        if len(items) not in (7, 9):
            raise HamiRegisterError(f"unexpected field count {len(items)} in {segment[:80]!r}")
        health = items[6].strip().lower()
        if health not in ("true", "false", "1", "0"):
            raise HamiRegisterError(f"health is not true or false: {items[6][:20]!r}")
        devices.append(HamiDevice(
            uuid=items[0],
            index=_hami_int(items[7], "index") if len(items) == 9 else len(devices),
            count=_hami_int(items[1], "count"),
            memory_mib=_hami_int(items[2], "devmem"),
            cores=_hami_int(items[3], "devcore"),
            type=items[4],
            health=health in ("true", "1"),
            mode=items[8] if len(items) == 9 else "hami-core",
        ))
    return devices


def parse_hami_register(text: str) -> tuple[HamiDevice, ...]:
    """The GPUs in a `hami.io/node-nvidia-register` annotation, in index order.

    HAMi v2.10's device plugin writes a JSON list (`device.MarshalNodeDevices` in
    `pkg/device/devices.go`): `[{"id": "GPU-…", "index": 1, "count": 10, "devmem": 81559,
    "devcore": 100, "type": "NVIDIA H100 80GB HBM3", "numa": 0, "mode": "hami-core",
    "health": true}, …]`, zero values left out. Older plugins (and `EncodeNodeDevices`) write
    `id,count,devmem,devcore,type,numa,health[,index,mode]:` per device, which v2.10 still
    decodes (`DecodeNodeDevices`); both are read. Raises HamiRegisterError for anything else.
    """
    text = (text or "").strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise HamiRegisterError(f"the register annotation is not JSON: {exc}") from None
        devices = _hami_json_devices(items)
    else:
        devices = _hami_legacy_devices(text)
    if len({d.index for d in devices}) != len(devices):
        # Indexes missing (all 0) or repeated: the plugin lists the GPUs in index order.
        devices = [HamiDevice(**{**d.as_record(), "index": i}) for i, d in enumerate(devices)]
    return tuple(sorted(devices, key=lambda d: d.index))


@dataclass(frozen=True)
class ObservedNode:
    """One cluster Node as the inventory sees it."""

    name: str
    hostname: str
    role: str
    labels: dict[str, str]
    gpu_product: str = ""
    gpu_model: GpuModel | None = None
    gpu_count: int = 0
    gpu_memory_gib: int = 0
    mig_capable: bool = False
    mig_strategy: str = ""
    mig_devices: dict[str, int] = field(default_factory=dict)
    nvlink_domain: str = ""
    cpu_cores: int | None = None
    memory_gib: int | None = None
    capacity: dict[str, str] = field(default_factory=dict)
    ready: bool | None = None
    conditions: list[dict[str, str]] = field(default_factory=list)
    unschedulable: bool = False
    reserved_for: str = ""
    taints: list[dict[str, Any]] = field(default_factory=list)
    # HAMi: the node is labelled for its device plugin, and what the plugin registered.
    hami_labelled: bool = False
    hami_devices: tuple[HamiDevice, ...] = ()
    hami_register_error: str = ""

    @property
    def has_gpus(self) -> bool:
        return bool(self.gpu_product) or self.gpu_count > 0

    @property
    def gpu_sharing(self) -> str:
        """How the node's GPUs are handed out: `hami` (shared by HAMi: labelled for its device
        plugin, or registered by it), `mig` (some GPUs partitioned by MIG), else `whole`.
        HAMi wins: its device plugin, not NVIDIA's, serves `nvidia.com/gpu` there."""
        if self.hami_labelled or self.hami_devices or self.hami_register_error:
            return "hami"
        if self.mig_devices and self.mig_strategy in ("single", "mixed"):
            return "mig"
        return "whole"

    def mig_layouts(self) -> list[list[str]]:
        """MIG profiles per GPU index. The node reports totals per profile, not per GPU: they
        are laid out in index order, which is exact for the uniform layouts mig-parted applies."""
        memory = self.gpu_model.memory_gib if self.gpu_model else 0
        layouts: list[list[str]] = [[] for _ in range(self.gpu_count)]
        free = [[MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES] for _ in range(self.gpu_count)]
        for profile, count in sorted(
            self.mig_devices.items(), key=lambda item: mig_slices(item[0], memory), reverse=True
        ):
            compute, mem = mig_slices(profile, memory)
            for _ in range(count):
                index = next(
                    (i for i, (c, m) in enumerate(free) if c >= compute and m >= mem), None
                )
                if index is None:
                    break
                layouts[index].append(profile)
                free[index][0] -= compute
                free[index][1] -= mem
        return layouts


def mig_slices(profile: str, gpu_memory_gib: int) -> tuple[int, int]:
    """(compute, memory) slices a MIG profile takes of a GPU's 7 and 8 (A100, H100, H200)."""
    match = re.match(r"(\d+)g\.(\d+)gb$", profile)
    if not match:
        return MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES
    compute, memory = int(match[1]), int(match[2])
    if not gpu_memory_gib:
        return compute, compute
    per_slice = gpu_memory_gib / MIG_MEMORY_SLICES
    return compute, max(1, min(MIG_MEMORY_SLICES, round(memory / per_slice)))


def mig_instances_per_gpu(profile: str, gpu_memory_gib: int) -> int:
    compute, memory = mig_slices(profile, gpu_memory_gib)
    return max(1, min(MIG_COMPUTE_SLICES // compute, MIG_MEMORY_SLICES // memory))


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def parse_memory_gib(quantity: str | None) -> int | None:
    """A Kubernetes memory quantity (`2113409304Ki`, `512Gi`, bytes) in whole GiB."""
    if not quantity:
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTPE]i?|)", str(quantity).strip())
    if not match:
        return None
    number, unit = float(match[1]), match[2]
    powers = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
    base = 1024 if unit.endswith("i") else 1000
    raw_bytes = number * base ** powers[unit.rstrip("i")]
    return round(raw_bytes / 1024**3)


def _cpu_cores(quantity: str | None) -> int | None:
    if not quantity:
        return None
    text = str(quantity)
    if text.endswith("m"):
        value = _int(text[:-1])
        return None if value is None else value // 1000
    return _int(text)


def _role(labels: dict[str, str], has_gpus: bool) -> str:
    if "node-role.kubernetes.io/control-plane" in labels:
        return "control-plane"
    return "gpu-worker" if has_gpus else "cpu-worker"


def parse_node(obj: dict[str, Any]) -> ObservedNode:
    """The inventory's view of a Node object (labels, capacity, conditions, cordon)."""
    meta = obj.get("metadata") or {}
    labels: dict[str, str] = {k: str(v) for k, v in (meta.get("labels") or {}).items()}
    annotations = meta.get("annotations") or {}
    status = obj.get("status") or {}
    capacity = {k: str(v) for k, v in (status.get("capacity") or {}).items()}
    name = meta.get("name") or ""

    hami_key, hami_value = resource_classes.HAMI_NODE_LABEL
    hami_devices: tuple[HamiDevice, ...] = ()
    hami_error = ""
    if resource_classes.HAMI_REGISTER_ANNOTATION in annotations:
        try:
            hami_devices = parse_hami_register(
                str(annotations[resource_classes.HAMI_REGISTER_ANNOTATION])
            )
        except HamiRegisterError as exc:
            hami_error = str(exc)[:300]

    product = labels.get(f"{LABEL}gpu.product", "")
    if not product and hami_devices:
        # No GPU Feature Discovery on the node: HAMi's registration names the GPUs.
        product = hami_devices[0].type.strip().replace(" ", "-")
    model, single_profile = resource_classes.parse_product_label(product) if product else (None, "")
    strategy = labels.get(f"{LABEL}mig.strategy", "")
    count = _int(labels.get(f"{LABEL}gpu.count"))
    hami = labels.get(hami_key) == hami_value or bool(hami_devices) or bool(hami_error)
    if count is None and hami:
        # HAMi's `nvidia.com/gpu` capacity counts vGPUs: only its registration counts GPUs.
        count = len(hami_devices)
    if count is None:
        count = _int(capacity.get(resource_classes.GPU_RESOURCE)) or 0
    memory_mib = _int(labels.get(f"{LABEL}gpu.memory")) or 0
    if not memory_mib and hami_devices:
        memory_mib = hami_devices[0].memory_mib  # GFD does not say: what HAMi registered

    mig_devices: dict[str, int] = {}
    if single_profile:
        # MIG `single`: gpu.count counts MIG devices, all of one profile, and gpu.memory is theirs.
        mig_devices[single_profile] = count
        memory_gib = model.memory_gib if model else 0
        count = math.ceil(count / mig_instances_per_gpu(single_profile, memory_gib))
    else:
        for key, value in labels.items():
            if match := _MIG_COUNT_LABEL.match(key):
                mig_devices[match["profile"]] = _int(value) or 0
        for key, value in capacity.items():
            if (match := _MIG_CAPACITY.match(key)) and match["profile"] not in mig_devices:
                mig_devices[match["profile"]] = _int(value) or 0
        memory_gib = round(memory_mib / 1024) if memory_mib else (model.memory_gib if model else 0)

    conditions = [
        {k: str(c.get(k, "")) for k in ("type", "status", "reason", "message")}
        for c in status.get("conditions") or []
    ]
    ready = next((c["status"] == "True" for c in conditions if c["type"] == "Ready"), None)
    has_gpus = bool(product) or count > 0 or hami
    return ObservedNode(
        name=name,
        hostname=labels.get("kubernetes.io/hostname") or name,
        role=_role(labels, has_gpus),
        labels={
            k: v for k, v in sorted(labels.items())
            if k.startswith(KEPT_LABEL_PREFIXES) or k == hami_key
        },
        gpu_product=product,
        gpu_model=model,
        gpu_count=count,
        gpu_memory_gib=memory_gib,
        mig_capable=labels.get(f"{LABEL}mig.capable") == "true" or bool(mig_devices),
        mig_strategy=strategy,
        mig_devices={k: v for k, v in sorted(mig_devices.items()) if v},
        nvlink_domain=labels.get(f"{LABEL}gpu.clique", ""),
        cpu_cores=_cpu_cores(capacity.get("cpu")),
        memory_gib=parse_memory_gib(capacity.get("memory")),
        capacity={
            k: v
            for k, v in sorted(capacity.items())
            if k.startswith(LABEL) or k in ("cpu", "memory")
        },
        ready=ready,
        conditions=conditions,
        unschedulable=bool((obj.get("spec") or {}).get("unschedulable")),
        reserved_for=str((meta.get("labels") or {}).get(RESERVED_FOR_KEY, "")),
        taints=list((obj.get("spec") or {}).get("taints") or []),
        hami_labelled=labels.get(hami_key) == hami_value,
        hami_devices=hami_devices,
        hami_register_error=hami_error,
    )
