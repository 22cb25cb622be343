"""A pod a tenant sends straight to its Kueue LocalQueue, as the portal's kinds label theirs
(not one of the portal's workloads): what the tests playing Kueue submit."""

from typing import Any


def queued_pod(namespace: str, name: str, *, gpus: int, priority: str,
               product: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {
            "kueue.x-k8s.io/queue-name": "default", "kueue.x-k8s.io/priority-class": priority}},
        "spec": {"nodeSelector": {"nvidia.com/gpu.product": product}, "containers": [
            {"name": "main", "image": "train:1",
             "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
    }
