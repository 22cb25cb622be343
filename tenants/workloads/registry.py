"""The workload kinds, in one place every layer reads: their modules, keys, labels, icons and
quota counters.

The kind keys and their people's names are the resource-class vocabulary's
(`inventory.resource_classes.WORKLOAD_KINDS`, `COUNT_LABELS`: quota counts `count:<kind>`);
this registry adds the behaviour, and refuses to load if the two disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from inventory import resource_classes

from .kinds import inference, notebook, slurm, vcluster, vm
from .kinds.base import WorkloadKind


@dataclass(frozen=True)
class KindEntry:
    key: str
    module: WorkloadKind
    label: str  # singular, "vCluster"
    plural: str  # "vClusters" (the vocabulary's count label)
    icon: str  # Bootstrap icon name
    summary: str  # one line for the launch page
    scalable: tuple[str, ...] = ()  # spec fields a running one may change, in form order
    # Its Kueue priority (a key of tenants.enforcement's PRIORITY_CLASSES): serving endpoints
    # above interactive work above batch.
    priority: str = "batch"

    @property
    def quota_counter(self) -> str:
        return f"count:{self.key}"


KINDS: dict[str, KindEntry] = {
    entry.key: entry
    for entry in (
        KindEntry(
            "vcluster", vcluster.KIND, vcluster.KIND.LABEL,
            resource_classes.COUNT_LABELS["vcluster"], "diagram-3",
            "Your own Kubernetes control plane on the shared fleet.",
            ("kubernetes_version", "gpu_scheduling", "cpu", "memory_gib"), priority="batch",
        ),
        KindEntry(
            "inference", inference.KIND, "Inference endpoint",
            resource_classes.COUNT_LABELS["inference"], "lightning-charge",
            "A model served by vLLM behind an OpenAI-compatible API (KServe).",
            ("min_replicas", "max_replicas", "gpus_per_replica", "gpu_memory_gib", "gpu_cores"),
            priority="serving",
        ),
        KindEntry(
            "vm", vm.KIND, vm.KIND.LABEL, resource_classes.COUNT_LABELS["vm"], "pc-display",
            "A virtual machine with whole GPUs by passthrough, reached over SSH (KubeVirt).",
            ("cpu", "memory_gib", "disk_gib", "gpus"), priority="interactive",
        ),
        KindEntry(
            "slurm", slurm.KIND, slurm.KIND.LABEL, resource_classes.COUNT_LABELS["slurm"],
            "grid-3x3-gap", "A Slurm cluster of GPU workers with a login node (Slinky).",
            ("workers",), priority="batch",
        ),
        KindEntry(
            "notebook", notebook.KIND, notebook.KIND.LABEL,
            resource_classes.COUNT_LABELS["notebook"], "journal-code",
            "JupyterLab or VS Code in the browser, on a GPU, MIG instance or HAMi share, with "
            "your home volume.",
            notebook.SCALABLE, priority="interactive",
        ),
    )
}

if set(KINDS) != set(resource_classes.WORKLOAD_KINDS) or any(
    key != entry.module.KEY for key, entry in KINDS.items()
):
    raise ImportError("the workload kinds differ from the resource-class vocabulary's")

CHOICES = [(key, entry.label) for key, entry in KINDS.items()]


def kind(key: str) -> KindEntry:
    """The kind `key`; KeyError for a kind the portal does not offer."""
    return KINDS[key]
