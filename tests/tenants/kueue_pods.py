"""A pod a tenant sends straight to its Kueue LocalQueue, as the portal's kinds label theirs
(not one of the portal's workloads): what the tests playing Kueue submit."""

from typing import Any


def queued_pod(namespace: str, name: str, *, gpus: int, priority: str,
               product: str, resource: str = "nvidia.com/gpu",
               queue: str = "default") -> dict[str, Any]:
    """`resource`: what its GPUs are asked for as (a passthrough device's name, as a VM's);
    `queue`: the LocalQueue it is sent to."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {
            "kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": priority}},
        "spec": {"nodeSelector": {"nvidia.com/gpu.product": product}, "containers": [
            {"name": "main", "image": "train:1",
             "resources": {"limits": {resource: str(gpus)}}}]},
    }


def hami_pod(namespace: str, name: str, *, memory_gib: int, cores: int, priority: str,
             product: str) -> dict[str, Any]:
    """One vGPU with explicit memory and compute, sent to the tenant's `shares` LocalQueue and
    placed by HAMi's scheduler, as the portal's HAMi endpoints' replicas are."""
    asked = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": str(memory_gib * 1024),
             "nvidia.com/gpucores": str(cores)}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {
            "kueue.x-k8s.io/queue-name": "shares", "kueue.x-k8s.io/priority-class": priority}},
        "spec": {"schedulerName": "hami-scheduler",
                 "nodeSelector": {"nvidia.com/gpu.product": product}, "containers": [
                     {"name": "main", "image": "train:1", "resources": {"limits": asked}}]},
    }
