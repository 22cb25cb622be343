"""Writes about workloads: what people ask (`lifecycle`: launch, scale, power, delete, their
admission against quota) and what the cluster does (`reconcile`: apply, observe, tear down)."""

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
    workloads_reconcile_sweep,
)

__all__ = [
    "workload_delete",
    "workload_kubeconfig",
    "workload_launch",
    "workload_observe",
    "workload_power",
    "workload_reconcile",
    "workload_refresh",
    "workload_scale",
    "workloads_observe_sweep",
    "workloads_reconcile_sweep",
]
