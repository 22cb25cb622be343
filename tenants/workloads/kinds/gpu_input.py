"""The GPU of a container workload (inference endpoints, notebooks): reading it from a person's
spec, and what it becomes in a pod.

A spec names one of three things in `gpu`: whole GPUs of a model (`gpu:<model>`), a MIG
instance (`mig:<model>:<profile>`), or a HAMi share of a model (`hami:<model>`) sized by
`gpu_memory_gib` (GiB of one GPU's memory) and `gpu_cores` (percent of its compute, at least
HAMI_MIN_CORES). Each pod holds `count` whole GPUs, or one MIG instance, or one vGPU. MIG and
HAMi are partitions: never for a dedicated tenant, neither at validation nor when a spec
stored while the tenant was shared is built for it.

A HAMi vGPU is `nvidia.com/gpu: 1`, `nvidia.com/gpumem` in MiB and `nvidia.com/gpucores`,
placed by `hami-scheduler` on a GPU of the type HAMi registered (`nvidia.com/use-gputype`) and
admitted by Kueue through the tenant's `shares` LocalQueue; whole GPUs and MIG instances go
through its default LocalQueue (`BuildContext.admission_labels`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inventory import resource_classes

from .base import BuildContext, LaunchContext, SpecError
from .spec_input import SpecFields

HAMI_FIELDS = ("gpu_memory_gib", "gpu_cores")
MIN_GPU_MEMORY_GIB = 1


@dataclass(frozen=True)
class Gpu:
    """The GPU a spec names: a whole-GPU or MIG class, or a HAMi share of a model."""

    key: str  # the spec's `gpu`: gpu:<model> | mig:<model>:<profile> | hami:<model>
    kind: str  # gpu | mig | hami
    model: resource_classes.GpuModel
    resource_class: resource_classes.ResourceClass | None = None  # None for a HAMi share

    @property
    def label(self) -> str:
        if self.resource_class is not None:
            return self.resource_class.label
        return f"{self.model.display_name} HAMi shares"

    @classmethod
    def of(cls, key: str) -> Gpu | None:
        model = resource_classes.parse_hami_gpu(key)
        if model is not None:
            return cls(key=key, kind="hami", model=model)
        try:
            rc = resource_classes.parse(key)
        except resource_classes.UnknownResourceClass:
            return None
        if rc.kind not in {"gpu", "mig", "hami"}:
            return None
        return cls(key=key, kind=rc.kind, model=rc.gpu_model, resource_class=rc)

    def demand(self, count: int, memory_gib: int | None, cores: int | None) -> dict[str, int]:
        """What one pod holds of it: `count` GPUs (or MIG instances), or a HAMi share's GiB
        of memory and percent of compute."""
        if self.kind == "hami":
            return {
                resource_classes.hami_key(self.model.key, "memory-gib"): int(memory_gib or 0),
                resource_classes.hami_key(self.model.key, "cores"): int(cores or 0),
            }
        return {self.key: int(count)}

    def resources(self, count: int, memory_gib: int | None, cores: int | None) -> dict[str, str]:
        """One pod's extended resources for it (requests = limits): `count` GPUs or MIG
        instances, or one vGPU with its memory (MiB) and compute."""
        if self.kind != "hami":
            return {self.resource_class.kubernetes_resource: str(int(count))}
        memory = resource_classes.parse(resource_classes.hami_key(self.model.key, "memory-gib"))
        return {
            resource_classes.GPU_RESOURCE: "1",  # one vGPU
            memory.kubernetes_resource: memory.kubernetes_quantity(int(memory_gib or 0)),
            resource_classes.HAMI_CORES_RESOURCE: str(int(cores or 0)),
        }

    def placement(self, ctx: BuildContext) -> dict[str, Any]:
        """A pod spec's scheduling fields for it: HAMi's scheduler for a share; the model's
        product label (for a HAMi share also the flavor Kueue admits it into) and a dedicated
        tenant's reserved nodes."""
        fields: dict[str, Any] = {}
        if self.kind == "hami":
            fields["schedulerName"] = resource_classes.HAMI_SCHEDULER
        fields["nodeSelector"] = ctx.gpu_node_selector(self.model.product_label)
        if tolerations := ctx.gpu_tolerations():
            fields["tolerations"] = tolerations
        return fields

    @property
    def pod_annotations(self) -> dict[str, str]:
        """A HAMi share's pod picks a GPU of its model by the type HAMi registered."""
        if self.kind != "hami":
            return {}
        return {resource_classes.HAMI_GPU_TYPE_ANNOTATION: self.model.hami_type}

    def admission_labels(self, ctx: BuildContext) -> dict[str, str]:
        """The Kueue labels of its pods: a HAMi share through the tenant's `shares` queue,
        metered in vGPUs, memory and compute; whole GPUs and MIG through its default queue."""
        return dict(ctx.shares_admission_labels if self.kind == "hami" else ctx.admission_labels)

    def refuse_if_dedicated(self, ctx: BuildContext, noun: str) -> None:
        """SpecError when a partition (MIG, HAMi) is built for a tenant that is dedicated now
        (the spec was stored while it was shared); `noun`: "endpoint", "notebook"."""
        if self.kind != "gpu" and not ctx.partitions_allowed:
            raise SpecError({"gpu": [f"{self.label} are partitions, and the tenant is dedicated "
                                     f"now: whole GPUs only. Delete this {noun} and launch "
                                     "one with a gpu:… class."]})


def read_gpu(fields: SpecFields, ctx: LaunchContext) -> Gpu | None:
    """The spec's `gpu` (required), if the tenant's pool offers it and its quota holds some."""
    expected = "A GPU class such as gpu:nvidia-h100-80gb."
    key = fields.text("gpu", max_length=200, expected=expected)
    if key is None:
        return None
    gpu = Gpu.of(key)
    if gpu is None:
        fields.error("gpu", expected)
        return None
    if gpu.kind == "hami" and gpu.resource_class is not None:
        fields.error("gpu", f"Name a HAMi share as {resource_classes.hami_gpu(gpu.model.key)}:"
                     " it holds GPU memory and compute, set with gpu_memory_gib and gpu_cores.")
        return None
    if gpu.kind != "gpu" and not ctx.partitions_allowed:
        fields.error("gpu", "Dedicated tenants get whole GPUs only: MIG partitions and HAMi "
                     "shares are shared inside one trust domain. Choose a gpu:… class.")
        return None
    offered = ", ".join(o.resource for o in ctx.gpu_offers) or "none"
    if gpu.kind == "hami":
        if ctx.hami_offer(gpu.model.key) is None:
            fields.error("gpu", f"Not in your pool: {gpu.label} (your pool offers {offered}).")
            return None
        missing = [
            resource_classes.parse(resource_classes.hami_key(gpu.model.key, counter)).label
            for counter in resource_classes.HAMI_COUNTERS
            if ctx.quota.get(resource_classes.hami_key(gpu.model.key, counter), 0) <= 0
        ]
        if missing:
            fields.error("gpu", f"No quota for {' or '.join(missing)}: request some first.")
            return None
        return gpu
    if ctx.offer(key) is None:
        fields.error("gpu", f"Not in your pool: {gpu.label} (your pool offers {offered}).")
        return None
    if ctx.quota.get(key, 0) <= 0:
        fields.error("gpu", f"No quota for {gpu.label}: request some first.")
        return None
    return gpu


def read_gpu_count(
    fields: SpecFields, gpu: Gpu | None, ctx: LaunchContext, *, field_name: str, per: str,
    default: int = 1,
) -> int | None:
    """How many of `gpu` one pod holds: 1..the largest node's count of whole GPUs, exactly one
    MIG instance or HAMi share. `per` words the pod for people ("per replica")."""
    # Bounded by the offer after reading, so the message can say why.
    count = fields.whole(field_name, default=default, minimum=1, maximum=1_000_000)
    if count is None or gpu is None:
        return count
    if gpu.kind == "hami":
        if count > 1:
            fields.error(field_name, f"One HAMi share {per}: size it with gpu_memory_gib and "
                         "gpu_cores instead.")
            return None
        return count
    offer = ctx.offer(gpu.key)
    if offer is None:
        return count
    most = offer.max_per_node
    if gpu.kind == "mig" and count > 1:
        fields.error(field_name, f"One MIG instance {per}: CUDA sees only one.")
        return None
    if count > most:
        fields.error(field_name, f"More GPUs {per} than any node has: at most {most}.")
        return None
    return count


def read_hami_share(
    fields: SpecFields, gpu: Gpu | None, ctx: LaunchContext
) -> tuple[int | None, int | None]:
    """A HAMi share's GiB of GPU memory and percent of compute per pod; neither for any other
    GPU (given anyway: a field error each)."""
    if gpu is None:
        return None, None  # the gpu field's own error says what to fix first
    if gpu.kind != "hami":
        refuse_hami_fields(fields)
        return None, None
    memory_offer, cores_offer = ctx.hami_offer(gpu.model.key)
    memory = fields.whole("gpu_memory_gib", default=None, minimum=MIN_GPU_MEMORY_GIB,
                          maximum=1_000_000)
    cores = fields.whole("gpu_cores", default=None, minimum=1, maximum=1_000_000)
    if memory is not None and memory > memory_offer.max_per_node:
        fields.error("gpu_memory_gib", f"At most {memory_offer.max_per_node} GiB: no GPU of "
                     "your pool has more for HAMi to share.")
        memory = None
    if cores is not None and cores < resource_classes.HAMI_MIN_CORES:
        fields.error("gpu_cores", f"At least {resource_classes.HAMI_MIN_CORES} %: HAMi splits a "
                     f"GPU into at most {resource_classes.HAMI_SPLIT_COUNT} shares, so a smaller "
                     "one would strand the rest of it.")
        cores = None
    elif cores is not None and cores > cores_offer.max_per_node:
        fields.error("gpu_cores", f"At most {cores_offer.max_per_node} %: all of one GPU's "
                     "compute (a share lives on one GPU).")
        cores = None
    return memory, cores


def refuse_hami_fields(fields: SpecFields) -> None:
    """A field error for each HAMi size given with a GPU that is no HAMi share (or none)."""
    for name in HAMI_FIELDS:
        if fields.spec.get(name) not in (None, ""):
            fields.error(name, "Only for a HAMi share (gpu: hami:<model>).")


def share_fields(gpu: Gpu, memory_gib: int | None, cores: int | None) -> Mapping[str, int]:
    """The HAMi sizes a clean spec holds: a share's memory and compute, nothing otherwise."""
    if gpu.kind != "hami":
        return {}
    return {"gpu_memory_gib": memory_gib, "gpu_cores": cores}
