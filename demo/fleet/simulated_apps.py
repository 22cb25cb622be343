"""Kubernetes' own controllers for the simulated fleet's workloads: the StatefulSet controller's
pods and the volume binder. Pure.

A StatefulSet runs a pod `<name>-<ordinal>` per replica (`0..replicas-1`), from its template:
the template's labels (the portal's owner labels and Kueue's, so Kueue's webhook gates a queued
one and admits it like any other kind's pod), its spec, owned by the StatefulSet and labelled
with its revision. A scale-down removes the highest ordinals, replicas 0 removes them all (a
stopped notebook: its GPUs go back to the queue and the nodes); a changed template replaces
them (deleted, then made again from the new template, as the RollingUpdate strategy does one
pod at a time). The StatefulSet reports its ready pods.

Only the StatefulSets the portal applies itself are played so: those an operator made (a
vCluster's control plane by its chart, Slurm's daemons by Slinky) carry an ownerReference or
Helm's release annotations, and come up after the fleet's delay as before, with no pods.

A PersistentVolumeClaim is Bound at once, with what it asked for (a provisioner with
`volumeBindingMode: Immediate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import simulated_operators as operators
from .simulated_clock import Clock, Status, digest
from .simulated_operators import Made, Plan, meta_of

Manifest = dict[str, Any]
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"


def replicas(obj: Manifest) -> int:
    value = (obj.get("spec") or {}).get("replicas", 1)
    return value if isinstance(value, int) and value >= 0 else 1


def revision(obj: Manifest) -> str:
    """`<name>-<hash>` of the pod template, as the controller's ControllerRevisions name it."""
    template = (obj.get("spec") or {}).get("template") or {}
    return f"{meta_of(obj).get('name', '')}-{digest(template)[:10]}"


def plays_pods(obj: Manifest) -> bool:
    """Whether the StatefulSet's pods are played: it is the portal's, not an operator's."""
    meta = meta_of(obj)
    return not meta.get("ownerReferences") and operators.HELM_RELEASE_NAME not in (
        meta.get("annotations") or {}
    )


def pod_ready(pod: Manifest) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def plan_stateful_set(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Plan:
    """A pod per replica of the current template; the others (a higher ordinal, an older
    template) are deleted, and made again from the current template on the next round."""
    if not plays_pods(obj):
        return Plan()
    name, namespace = operators.name_and_namespace(obj)
    template = (obj.get("spec") or {}).get("template") or {}
    current = revision(obj)
    pods = operators.by_kind(children, "Pod")
    made = []
    for ordinal in range(replicas(obj)):
        pod_name = f"{name}-{ordinal}"
        existing = pods.get(pod_name)
        if existing is not None:
            if ((meta_of(existing).get("labels") or {}).get(REVISION_LABEL)) == current:
                made.append(Made(existing, clock.now))
            continue  # an older template's pod: deleted now, made again next round
        labels = {
            **((template.get("metadata") or {}).get("labels") or {}),
            REVISION_LABEL: current,
            POD_NAME_LABEL: pod_name,
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": namespace, "labels": labels,
                         "ownerReferences": [operators.owner_reference(obj)]},
            "spec": {**(template.get("spec") or {}), "hostname": pod_name},
        }
        made.append(Made(pod, clock.changed_at))
    return Plan(tuple(made), frozenset({("v1", "Pod")}))


def persistent_volume_claim(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """Bound at once to a volume of the size and access modes it asked for."""
    spec = obj.get("spec") or {}
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    return {
        "phase": "Bound",
        "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
        "capacity": {"storage": storage} if storage else {},
    }
