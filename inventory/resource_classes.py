"""The one vocabulary of resource classes shared by quota, admission, metering and rates.

Keys look like `gpu:nvidia-h200`, `mig:nvidia-a100-80gb:1g.10gb`,
`hami:nvidia-l40s:memory-gib`, `hami:nvidia-l40s:cores`, `cpu`, `memory-gib`, `storage-gib`,
`count:vm`. Each GPU class maps to its Kubernetes side here and nowhere else: the extended
resource it consumes (and, for whole GPUs, the one a VM's passthrough GPU is), the node label
that selects its model, and the unit Kubernetes counts in.

HAMi shares (kind `hami`) are two counters per GPU model, because HAMi splits a GPU along two
axes a pod asks for separately: GiB of the GPU's memory (`nvidia.com/gpumem`, which Kubernetes
counts in MiB) and percent of its compute (`nvidia.com/gpucores`, 100 = one whole GPU). A pod
asking for `nvidia.com/gpu: n` vGPUs with `gpumem: m` holds n * m of the memory counter. The
vGPU count itself is no class of its own: under HAMi it is a count of slices, not of GPUs.
Like MIG, HAMi shares are partitions: never for a dedicated tenant.

A workload names the HAMi share of a model as `hami:<model>` (`hami_gpu`, no resource class of
its own: it holds both counters). HAMi's side of a node and a pod is named here too: the label
its device plugin runs on (`gpu=on`), the annotation it registers the GPUs in, its scheduler,
and the pod annotation that picks a GPU type by the name HAMi registered (`hami_type`, the
NVML device name, which GPU Feature Discovery turns into the product label by replacing
spaces with `-`).
"""

from dataclasses import dataclass

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_RESOURCE = "nvidia.com/gpu"
HAMI_MEMORY_RESOURCE = "nvidia.com/gpumem"  # MiB per vGPU
HAMI_CORES_RESOURCE = "nvidia.com/gpucores"  # percent of one GPU's compute per vGPU
HAMI_MEMORY_PERCENT_RESOURCE = "nvidia.com/gpumem-percentage"  # percent of its memory per vGPU
MIB_PER_GIB = 1024

# HAMi v2.10 (Project-HAMi/HAMi): its device plugin DaemonSet runs on nodes labelled `gpu=on`
# (chart value `devicePlugin.nvidiaNodeSelector`) and registers their GPUs in the annotation;
# pods are scheduled by `hami-scheduler` and pick a GPU type with `nvidia.com/use-gputype`
# (a case-insensitive substring of the registered type).
HAMI_NODE_LABEL = ("gpu", "on")
HAMI_REGISTER_ANNOTATION = "hami.io/node-nvidia-register"
HAMI_SCHEDULER = "hami-scheduler"
HAMI_GPU_TYPE_ANNOTATION = "nvidia.com/use-gputype"
# The chart's `devicePlugin.deviceSplitCount`: HAMi hands out at most this many vGPUs of one
# GPU, so shares below a tenth of its compute would strand the rest of the GPU. The portal's
# shares are at least HAMI_MIN_CORES percent, which also bounds the vGPUs a grant can hold.
HAMI_SPLIT_COUNT = 10
HAMI_MIN_CORES = 100 // HAMI_SPLIT_COUNT


@dataclass(frozen=True)
class GpuModel:
    key: str
    display_name: str
    product_label: str
    memory_gib: int
    mig_profiles: tuple[str, ...] = ()
    hami_type: str = ""  # the NVML device name HAMi registers, e.g. "NVIDIA A100-SXM4-80GB"

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)


GPU_MODELS: dict[str, GpuModel] = {
    m.key: m
    for m in (
        GpuModel(
            "nvidia-h200",
            "NVIDIA H200 141GB",
            "NVIDIA-H200",
            141,
            ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
            "NVIDIA H200",
        ),
        GpuModel(
            "nvidia-h100-80gb",
            "NVIDIA H100 80GB HBM3",
            "NVIDIA-H100-80GB-HBM3",
            80,
            ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
            "NVIDIA H100 80GB HBM3",
        ),
        GpuModel(
            "nvidia-a100-80gb",
            "NVIDIA A100 SXM4 80GB",
            "NVIDIA-A100-SXM4-80GB",
            80,
            ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
            "NVIDIA A100-SXM4-80GB",
        ),
        GpuModel("nvidia-l40s", "NVIDIA L40S", "NVIDIA-L40S", 48, (), "NVIDIA L40S"),
        GpuModel(
            "nvidia-rtx-4000-ada",
            "NVIDIA RTX 4000 Ada",
            "NVIDIA-RTX-4000-Ada-Generation",
            20,
            (),
            "NVIDIA RTX 4000 Ada Generation",
        ),
    )
}

# Whole GPUs passed through to KubeVirt VMs: the extended resource the NVIDIA sandbox device
# plugin advertises each model as on a node in passthrough mode (its PCI-database name,
# upper-cased, spaces and brackets as `_`; the SXM variant of a model that comes in several).
# A passthrough node carries no GPU product label: the resource name itself says the model.
PASSTHROUGH_RESOURCES: dict[str, str] = {
    "nvidia-h200": "nvidia.com/GH100_H200_SXM_141GB",
    "nvidia-h100-80gb": "nvidia.com/GH100_H100_SXM5_80GB",
    "nvidia-a100-80gb": "nvidia.com/GA100_A100_SXM4_80GB",
    "nvidia-l40s": "nvidia.com/AD102GL_L40S",
    "nvidia-rtx-4000-ada": "nvidia.com/AD104GL_RTX_4000_ADA_GENERATION",
}

SCALAR_CLASSES: dict[str, str] = {
    "cpu": "vCPU",
    "memory-gib": "Memory (GiB)",
    "storage-gib": "Storage (GiB)",
}
# HAMi counter → (extended resource, what a person reads after the model's name).
HAMI_COUNTERS: dict[str, tuple[str, str]] = {
    "memory-gib": (HAMI_MEMORY_RESOURCE, "HAMi GPU memory (GiB)"),
    "cores": (HAMI_CORES_RESOURCE, "HAMi GPU compute (% of a GPU)"),
}
WORKLOAD_KINDS: tuple[str, ...] = ("vcluster", "vm", "slurm", "inference", "notebook")
COUNT_LABELS: dict[str, str] = {
    "vcluster": "vClusters",
    "vm": "VMs",
    "slurm": "Slurm clusters",
    "inference": "Inference endpoints",
    "notebook": "Notebooks",
}
# What one unit of a class is, as an invoice counts it ("GPU" in GPU-hours, "GiB" in GiB-months).
SCALAR_UNITS: dict[str, str] = {"cpu": "vCPU", "memory-gib": "GiB", "storage-gib": "GiB"}
HAMI_UNITS: dict[str, str] = {"memory-gib": "HAMi memory GiB", "cores": "HAMi compute unit"}
COUNT_UNITS: dict[str, str] = {
    "vcluster": "vCluster",
    "vm": "VM",
    "slurm": "Slurm cluster",
    "inference": "endpoint",
    "notebook": "notebook",
}


class UnknownResourceClass(ValueError):
    pass


@dataclass(frozen=True)
class ResourceClass:
    key: str
    kind: str  # gpu | mig | hami | scalar | count
    gpu_model: GpuModel | None = None
    mig_profile: str = ""
    hami_counter: str = ""  # memory-gib | cores, for kind hami

    @property
    def label(self) -> str:
        if self.kind == "gpu":
            return f"{self.gpu_model.display_name} GPUs"
        if self.kind == "mig":
            return f"{self.gpu_model.display_name} MIG {self.mig_profile}"
        if self.kind == "hami":
            return f"{self.gpu_model.display_name} {HAMI_COUNTERS[self.hami_counter][1]}"
        if self.kind == "count":
            kind = self.key.split(":", 1)[1]
            return COUNT_LABELS.get(kind, f"{kind} workloads")
        return SCALAR_CLASSES[self.key]

    @property
    def unit_noun(self) -> str:
        """One unit of this class, as a quantity counts it: "GPU", "MIG instance", "HAMi
        compute unit" (1 % of one GPU's compute), "HAMi memory GiB", "vCPU", "GiB", "VM"."""
        if self.kind == "gpu":
            return "GPU"
        if self.kind == "mig":
            return "MIG instance"
        if self.kind == "hami":
            return HAMI_UNITS[self.hami_counter]
        if self.kind == "count":
            return COUNT_UNITS.get(self.key.split(":", 1)[1], "workload")
        return SCALAR_UNITS[self.key]

    @property
    def kubernetes_resource(self) -> str:
        """The extended resource (or core resource) this class consumes on a node."""
        if self.kind == "gpu":
            return GPU_RESOURCE
        if self.kind == "mig":
            return f"nvidia.com/mig-{self.mig_profile}"
        if self.kind == "hami":
            return HAMI_COUNTERS[self.hami_counter][0]
        return {"cpu": "cpu", "memory-gib": "memory", "storage-gib": "storage"}.get(self.key, "")

    def kubernetes_quantity(self, amount: int) -> str:
        """`amount` of this class as the quantity Kubernetes counts its resource in (requests,
        limits, quota): GiB become `Gi` (core memory, storage) or MiB (HAMi's `gpumem`)."""
        if self.kind == "hami" and self.hami_counter == "memory-gib":
            return str(amount * MIB_PER_GIB)
        if self.key in ("memory-gib", "storage-gib"):
            return f"{amount}Gi"
        return str(amount)

    @property
    def node_selector(self) -> dict[str, str]:
        if self.gpu_model is None:
            return {}
        return {GPU_PRODUCT_LABEL: self.gpu_model.product_label}


def parse(key: str) -> ResourceClass:
    """Return the resource class for `key`, or raise UnknownResourceClass."""
    if key in SCALAR_CLASSES:
        return ResourceClass(key=key, kind="scalar")
    kind, _, rest = key.partition(":")
    if kind == "gpu" and rest in GPU_MODELS:
        return ResourceClass(key=key, kind="gpu", gpu_model=GPU_MODELS[rest])
    if kind == "mig":
        model_key, _, profile = rest.partition(":")
        model = GPU_MODELS.get(model_key)
        if model and profile in model.mig_profiles:
            return ResourceClass(key=key, kind="mig", gpu_model=model, mig_profile=profile)
    if kind == "hami":
        model_key, _, counter = rest.partition(":")
        model = GPU_MODELS.get(model_key)
        if model and counter in HAMI_COUNTERS:
            return ResourceClass(key=key, kind="hami", gpu_model=model, hami_counter=counter)
    if kind == "count" and rest in WORKLOAD_KINDS:
        return ResourceClass(key=key, kind="count")
    raise UnknownResourceClass(f"Unknown resource class {key!r}.")


def gpu_label(model_key: str | None) -> str:
    """`nvidia-h100-80gb` → `NVIDIA H100 80GB HBM3` (unknown keys are shown as they are)."""
    model = GPU_MODELS.get(model_key or "")
    return model.display_name if model else (model_key or "")


def gpu_class(model_key: str) -> str:
    return f"gpu:{model_key}"


def key_order() -> dict[str, int]:
    """Each resource class's place in `all_keys()` (the order pages list classes in)."""
    return {key: i for i, key in enumerate(all_keys())}


def all_keys() -> list[str]:
    keys = [gpu_class(k) for k in GPU_MODELS]
    keys += [f"mig:{m.key}:{p}" for m in GPU_MODELS.values() for p in m.mig_profiles]
    keys += [hami_key(m, counter) for m in GPU_MODELS for counter in HAMI_COUNTERS]
    keys += list(SCALAR_CLASSES)
    keys += [f"count:{k}" for k in WORKLOAD_KINDS]
    return keys


def model_for_product_label(product: str) -> GpuModel | None:
    for model in GPU_MODELS.values():
        if model.product_label == product:
            return model
    return None


def _bare_product(product: str) -> str:
    return product.upper().removeprefix("NVIDIA-")


def parse_product_label(product: str) -> tuple[GpuModel | None, str]:
    """The model (and MIG profile, under the `single` strategy) a GFD product label names.

    GPU Feature Discovery writes `NVIDIA-H100-80GB-HBM3`, older releases `A100-SXM4-80GB`
    (no vendor prefix), and under MIG `single` it appends the profile: `…-MIG-1g.10gb`.
    """
    base, _, profile = product.partition("-MIG-")
    wanted = _bare_product(base)
    for model in GPU_MODELS.values():
        if _bare_product(model.product_label) == wanted:
            return model, profile
    return None, profile


def mig_model_key(model_key: str, profile: str) -> str:
    return f"mig:{model_key}:{profile}"


def hami_key(model_key: str, counter: str) -> str:
    """`hami:<model>:memory-gib` or `hami:<model>:cores`."""
    return f"hami:{model_key}:{counter}"


def hami_gpu(model_key: str) -> str:
    """`hami:<model>`: how a workload names the HAMi share of a GPU model (both counters)."""
    return f"hami:{model_key}"


def parse_hami_gpu(value: str) -> GpuModel | None:
    """The model `hami:<model>` names, or None for anything else."""
    kind, _, model_key = value.partition(":")
    if kind != "hami" or ":" in model_key:
        return None
    return GPU_MODELS.get(model_key)


def model_for_hami_type(hami_type: str) -> GpuModel | None:
    """The model of a type HAMi registered (`NVIDIA H100 80GB HBM3`, or for an NVML name not
    starting with NVIDIA, HAMi's `NVIDIA-Tesla T4`): GFD's product label is the same name with
    spaces as `-`."""
    model, profile = parse_product_label(hami_type.strip().replace(" ", "-"))
    return None if profile else model


def hami_limit_per_gpu(resource_class: ResourceClass) -> int:
    """The most of a HAMi counter one physical GPU holds: its memory in GiB, or 100 percent."""
    if resource_class.kind != "hami":
        raise UnknownResourceClass(f"{resource_class.key!r} is not a HAMi share.")
    if resource_class.hami_counter == "memory-gib":
        return resource_class.gpu_model.memory_gib
    return 100
