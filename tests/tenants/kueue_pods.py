"""A pod a tenant sends straight to its Kueue LocalQueue, as the portal's kinds label theirs
(not one of the portal's workloads): what the tests playing Kueue submit."""

from typing import Any


def queued_pod(namespace: str, name: str, *, gpus: int, priority: str,
               product: str, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    """`resource`: what its GPUs are asked for as (a passthrough device's name, as a VM's)."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {
            "kueue.x-k8s.io/queue-name": "default", "kueue.x-k8s.io/priority-class": priority}},
        "spec": {"nodeSelector": {"nvidia.com/gpu.product": product}, "containers": [
            {"name": "main", "image": "train:1",
             "resources": {"limits": {resource: str(gpus)}}}]},
    }
