"""Writes about workloads: what people ask (`lifecycle`: launch, scale, power, delete, their
admission against quota; `endpoint_keys`: an inference endpoint's API keys), what the cluster
does (`reconcile`: apply, observe, tear down) and what platform admins offer (`catalog`: VM boot
images)."""

from .catalog import notebook_image_save, vm_image_save
from .idle import idle_policy_save, idle_undo, workload_keep_running, workloads_idle_sweep
from .lifecycle import (
    workload_delete,
    workload_kubeconfig,
    workload_launch,
    workload_power,
    workload_refresh,
    workload_scale,
)
from .reconcile import (
    workload_observe,
    workload_reconcile,
    workloads_observe_sweep,
    workloads_observe_sweeps,
    workloads_reconcile_sweep,
)

__all__ = [
    "idle_policy_save",
    "idle_undo",
    "notebook_image_save",
    "vm_image_save",
    "workload_delete",
    "workload_keep_running",
    "workload_kubeconfig",
    "workload_launch",
    "workload_observe",
    "workload_power",
    "workload_reconcile",
    "workload_refresh",
    "workload_scale",
    "workloads_idle_sweep",
    "workloads_observe_sweep",
    "workloads_observe_sweeps",
    "workloads_reconcile_sweep",
]
