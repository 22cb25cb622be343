"""What the cluster's controllers would write into `status`, and what they make, for the
simulated fleet: the registries the gateway plays.

Pure functions: given an object, its `Clock` (when it was made and last changed, how long its
controller takes, now) and the objects its controller made for it, a status writer returns the
status a real controller would report. Here: the built-in controllers (namespaces, the quota
controller, StatefulSets (`simulated_apps`: their pods too, and the volume binder), Deployments,
and kubelet for the pods an operator makes) and Kueue's;
the workload operators' are one module per project (`simulated_flux`, `simulated_kserve`,
`simulated_kubevirt`, `simulated_slinky`), each with what that operator makes (`OPERATORS`).
Kinds no controller owns return None.
"""

from collections.abc import Callable, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from . import simulated_apps as apps
from . import simulated_flux as flux
from . import simulated_kserve as kserve
from . import simulated_kubevirt as kubevirt
from . import simulated_slinky as slinky
from .simulated_clock import Clock, Status, condition, digest, generation
from .simulated_operators import Operator

Manifest = dict[str, Any]
StatusWriter = Callable[[Manifest, Clock, Sequence[Manifest]], Status | None]


def _namespace(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    # A namespace is Active as soon as it exists; only deletion makes it Terminating.
    return {"phase": "Active"}


def _kueue_queue(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """A queue's Active condition; the gateway fills in the counts of Kueue's last round
    (`simulated_kueue.queue_status`)."""
    gen = generation(obj)
    reason, message = (
        ("Ready", "Can admit new workloads")
        if clock.ready
        else ("FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s)")
    )
    return {
        "conditions": [condition("Active", clock.ready, reason, message, clock.since, gen)],
        "pendingWorkloads": 0,
        "admittedWorkloads": 0,
        "reservingWorkloads": 0,
    }


def _resource_quota(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    # Kubernetes' quota controller counts a new quota's usage at once, not after a delay.
    hard = dict((obj.get("spec") or {}).get("hard") or {})
    return {"hard": hard, "used": dict.fromkeys(hard, "0")}


def _replicas(obj: Manifest) -> int:
    value = (obj.get("spec") or {}).get("replicas", 1)
    return value if isinstance(value, int) and value >= 0 else 1


def _stateful_set(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """The StatefulSet controller: the pods it runs (`simulated_apps`) once they are ready; an
    operator's StatefulSet, whose pods are not played, once the delay has passed (a changed
    template replaces them, so none is ready meanwhile)."""
    replicas, gen = _replicas(obj), generation(obj)
    if apps.plays_pods(obj):
        pods = [c for c in children if c.get("kind") == "Pod"]
        made, up = len(pods), sum(1 for pod in pods if apps.pod_ready(pod))
    else:
        made, up = replicas, replicas if clock.ready else 0
    revision = apps.revision(obj)
    return {
        "observedGeneration": gen,
        "replicas": made,
        "readyReplicas": up,
        "availableReplicas": up,
        "currentReplicas": made,
        "updatedReplicas": made,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
    }


def _deployment(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """The Deployment controller: a rolling update keeps the old pods serving."""
    replicas, gen = _replicas(obj), generation(obj)
    serving = clock.ready or clock.served_before_change
    up = replicas if serving else 0
    name = obj["metadata"]["name"]
    available = condition(
        "Available", bool(up) or not replicas,
        "MinimumReplicasAvailable" if up or not replicas else "MinimumReplicasUnavailable",
        "Deployment has minimum availability." if up or not replicas
        else "Deployment does not have minimum availability.",
        clock.since, gen,
    )
    progressing = condition(
        "Progressing", True,
        "NewReplicaSetAvailable" if clock.ready else "ReplicaSetUpdated",
        f'ReplicaSet "{name}" has successfully progressed.' if clock.ready
        else f'ReplicaSet "{name}" is progressing.',
        clock.since, gen,
    )
    conditions = [{k: v for k, v in c.items() if k != "observedGeneration"}
                  | {"lastUpdateTime": c["lastTransitionTime"]} for c in (available, progressing)]
    return {
        "observedGeneration": gen,
        "replicas": replicas,
        "readyReplicas": up,
        "availableReplicas": up,
        "updatedReplicas": replicas if clock.ready else 0,
        "unavailableReplicas": replicas - up,
        "conditions": conditions,
    }


def _pod(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status | None:
    """kubelet, for the pods an operator made (ownerReferences) and the scheduler placed:
    ContainerCreating until the delay has passed, then Running and Ready. Other pods keep the
    status they were given (the demo data plays kubelet for those), and so does a pod no node
    could take (the scheduler's verdict, written when it was made)."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    if not meta.get("ownerReferences") or not spec.get("nodeName"):
        return None
    ready, since = clock.ready, clock.since
    containers = [c.get("name", "main") for c in spec.get("containers") or []]

    def pod_condition(kind: str, ok: bool) -> Status:
        return {"type": kind, "status": "True" if ok else "False", "lastProbeTime": None,
                "lastTransitionTime": since}

    status: Status = {
        "phase": "Running" if ready else "Pending",
        "qosClass": "Guaranteed",
        "hostIP": _ip("10.0", spec.get("nodeName")),
        "startTime": since,
        "conditions": [
            pod_condition("PodScheduled", True),
            pod_condition("Initialized", ready),
            pod_condition("ContainersReady", ready),
            pod_condition("Ready", ready),
        ],
        "containerStatuses": [
            {
                "name": name,
                "ready": ready,
                "restartCount": 0,
                "started": ready,
                "image": next((c.get("image", "") for c in spec.get("containers") or []
                               if c.get("name") == name), ""),
                "state": {"running": {"startedAt": since}} if ready
                else {"waiting": {"reason": "ContainerCreating"}},
            }
            for name in containers
        ],
    }
    if ready:
        status["podIP"] = _ip("10.244", meta.get("uid"))
    return status


GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
# The simulated load balancer's address pool (MetalLB's role): TEST-NET-3, documentation only.
LOAD_BALANCER_POOL = "203.0.113"


def _service(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """The load balancer: a LoadBalancer Service gets a stable address of the pool at once."""
    if (obj.get("spec") or {}).get("type") != "LoadBalancer":
        return {"loadBalancer": {}}
    meta = obj.get("metadata") or {}
    seed = bytes.fromhex(digest(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}"))
    address = f"{LOAD_BALANCER_POOL}.{1 + seed[0] % 254}"
    return {"loadBalancer": {"ingress": [{"ip": address, "ipMode": "VIP"}]}}


def _tls_route(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """Envoy Gateway: every parent Gateway accepts the route and resolves its backend."""
    gen = generation(obj)
    return {"parents": [
        {"parentRef": ref, "controllerName": GATEWAY_CONTROLLER, "conditions": [
            condition("Accepted", True, "Accepted", "Route is accepted", clock.since, gen),
            condition("ResolvedRefs", True, "ResolvedRefs", "Resolved all the Object references "
                      "for the Route", clock.since, gen),
        ]}
        for ref in (obj.get("spec") or {}).get("parentRefs") or []
    ]}


def _ip(prefix: str, seed: Any) -> str:
    """A made-up but stable address in `prefix`.0.0/16 (a pod's changes with each pod)."""
    seed_bytes = bytes.fromhex(digest(seed))
    return f"{prefix}.{seed_bytes[0]}.{2 + seed_bytes[1] % 250}"


# --- usage: what the quota controller counts of the pods that run ---------------------------


def _quantity(value: Any) -> Decimal:
    try:
        return parse_quantity(str(value))
    except (ValueError, TypeError, ArithmeticError):
        return Decimal(0)


def _format_quantity(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else f"{int(value * 1000)}m"


def pod_requests(pod: dict[str, Any]) -> dict[str, Decimal]:
    """A running pod's requests per resource (a limit alone counts as the request, as in
    Kubernetes); a finished pod holds nothing."""
    if ((pod.get("status") or {}).get("phase")) in {"Succeeded", "Failed"}:
        return {}
    totals: dict[str, Decimal] = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in asked.items():
            totals[name] = totals.get(name, Decimal(0)) + _quantity(value)
    return totals


def resource_quota_used(
    hard: dict[str, Any],
    pods: list[dict[str, Any]],
    objects: list[tuple[str, str]] = (),
) -> dict[str, str]:
    """`status.used` of a ResourceQuota over the namespace's pods, for every key of `hard`;
    `count/<plural>.<group>` keys count the namespace's `objects` ((api_version, kind) each),
    as Kubernetes' object count quota does."""
    used = dict.fromkeys(hard, Decimal(0))
    for api_version, kind in objects:
        key = f"count/{kind.lower()}s.{api_version.split('/')[0]}"
        if key in used:
            used[key] += 1
    for pod in pods:
        asked = pod_requests(pod)
        if not asked and ((pod.get("status") or {}).get("phase")) in {"Succeeded", "Failed"}:
            continue
        if "pods" in used:
            used["pods"] += 1
        for name, value in asked.items():
            for key in (f"requests.{name}", name if name in {"cpu", "memory"} else ""):
                if key in used:
                    used[key] += value
    return {key: _format_quantity(value) for key, value in used.items()}


CONTROLLERS: dict[tuple[str, str], StatusWriter] = {
    ("v1", "Namespace"): _namespace,
    ("v1", "ResourceQuota"): _resource_quota,
    ("v1", "Service"): _service,
    ("v1", "PersistentVolumeClaim"): apps.persistent_volume_claim,
    ("gateway.networking.k8s.io/v1", "TLSRoute"): _tls_route,
    ("apps/v1", "StatefulSet"): _stateful_set,
    ("apps/v1", "Deployment"): _deployment,
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): _kueue_queue,
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"): _kueue_queue,
    ("source.toolkit.fluxcd.io/v1", "HelmRepository"): flux.helm_repository,
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease"): flux.helm_release,
    ("serving.kserve.io/v1beta1", "InferenceService"): kserve.inference_service,
    (kubevirt.KUBEVIRT, "VirtualMachine"): kubevirt.virtual_machine,
    (kubevirt.KUBEVIRT, "VirtualMachineInstance"): kubevirt.virtual_machine_instance,
    (kubevirt.CDI, "DataVolume"): kubevirt.data_volume,
    **{(slinky.SLINKY, kind): slinky.slinky_status for kind in slinky.KINDS},
}
# kubelet writes a pod's status, but the demo data brings some pods with theirs (a finished
# job): their status is kept on apply, and only the pods an operator made are played.
INFERENCE_SERVICE = ("serving.kserve.io/v1beta1", "InferenceService")
KUBELET: dict[tuple[str, str], StatusWriter] = {("v1", "Pod"): _pod}
# What part of the fleet's delay each takes (the rest take all of it): a VM's disk imports in
# the first half, its guest boots in the second; a chart repository's index is quick.
READY_FRACTIONS = {
    ("source.toolkit.fluxcd.io/v1", "HelmRepository"): 0.25,
    (kubevirt.CDI, "DataVolume"): 0.5,
    (kubevirt.KUBEVIRT, "VirtualMachineInstance"): 0.5,
}
# The controllers that make objects for the ones they own, and the kinds they make.
OPERATORS: dict[tuple[str, str], Operator] = {
    ("apps/v1", "StatefulSet"): Operator(
        (("v1", "Pod"),), apps.plan_stateful_set, plays=apps.plays_pods
    ),
    ("serving.kserve.io/v1beta1", "InferenceService"): Operator(
        (("v1", "Pod"),), kserve.plan_inference_service
    ),
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease"): Operator(
        (("apps/v1", "StatefulSet"), ("v1", "Service"), ("v1", "Secret")),
        flux.plan_helm_release,
    ),
    (kubevirt.KUBEVIRT, "VirtualMachine"): Operator(
        ((kubevirt.CDI, "DataVolume"), (kubevirt.KUBEVIRT, "VirtualMachineInstance")),
        kubevirt.plan_virtual_machine,
    ),
    (kubevirt.KUBEVIRT, "VirtualMachineInstance"): Operator(
        (("v1", "Pod"),), kubevirt.plan_virtual_machine_instance
    ),
    **{
        (slinky.SLINKY, kind): Operator(
            (("apps/v1", "StatefulSet"), ("apps/v1", "Deployment"), ("v1", "Pod"),
             ("v1", "Service")),
            slinky.plan_slinky,
        )
        for kind in slinky.KINDS
    },
}


def ready_after(api_version: str, kind: str, delay: timedelta) -> timedelta:
    """How long the kind's controller takes, of the fleet's delay."""
    return delay * READY_FRACTIONS.get((api_version, kind), 1.0)


def controller_status(
    obj: Manifest, clock: Clock, children: Sequence[Manifest] = (),
    credentials: frozenset[str] = frozenset(),
) -> Status | None:
    """The status the kind's controller reports at `clock.now`; None if no controller owns
    the kind (or, for a pod, if it keeps the status it was given). `credentials`: for an
    InferenceService, the keys of the Secrets its predictor's ServiceAccount lists."""
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    if key == INFERENCE_SERVICE:
        return kserve.inference_service(obj, clock, children, credentials)
    writer = CONTROLLERS.get(key) or KUBELET.get(key)
    return None if writer is None else writer(obj, clock, children)
