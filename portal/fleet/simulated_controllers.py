"""What the cluster's controllers would write into `status`, for the simulated fleet.

Pure functions: given an object, whether its controller has had time to finish, and when its
spec last changed, return the status a real controller (KServe, KubeVirt, Flux, Kueue, Slinky,
the quota controller) would report. Kinds no controller owns return None.
"""

import base64
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity

Status = dict[str, Any]
StatusWriter = Callable[[dict[str, Any], bool, str], Status]


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(kind: str, ok: bool, reason: str, message: str, since: str, gen: int) -> Status:
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
        "observedGeneration": gen,
    }


def _generation(obj: dict[str, Any]) -> int:
    return int(obj.get("metadata", {}).get("generation") or 1)


def _namespace(obj: dict[str, Any], ready: bool, since: str) -> Status:
    # A namespace is Active as soon as it exists; only deletion makes it Terminating.
    return {"phase": "Active"}


def _inference_service(obj: dict[str, Any], ready: bool, since: str) -> Status:
    meta, gen = obj["metadata"], _generation(obj)
    if not ready:
        return {
            "observedGeneration": gen,
            "conditions": [
                _condition(
                    "PredictorReady",
                    False,
                    "ProgressDeadlineNotExceeded",
                    "Deployment is progressing",
                    since,
                    gen,
                ),
                _condition(
                    "Ready", False, "PredictorNotReady", "Predictor is not ready yet", since, gen
                ),
            ],
        }
    host = f"{meta['name']}.{meta.get('namespace', 'default')}"
    return {
        "observedGeneration": gen,
        "url": f"http://{host}.example",
        "address": {"url": f"http://{host}.svc.cluster.local"},
        "conditions": [
            _condition("IngressReady", True, "Ready", "", since, gen),
            _condition("PredictorReady", True, "Ready", "", since, gen),
            _condition("Ready", True, "Ready", "", since, gen),
        ],
    }


def _virtual_machine(obj: dict[str, Any], ready: bool, since: str) -> Status:
    spec, gen = obj.get("spec") or {}, _generation(obj)
    if spec.get("runStrategy") == "Halted" or spec.get("running") is False:
        return {
            "printableStatus": "Stopped",
            "ready": False,
            "created": False,
            "observedGeneration": gen,
        }
    if not ready:
        return {
            "printableStatus": "Provisioning",
            "ready": False,
            "created": True,
            "observedGeneration": gen,
            "conditions": [
                _condition("Ready", False, "Provisioning", "Guest is starting", since, gen)
            ],
        }
    return {
        "printableStatus": "Running",
        "ready": True,
        "created": True,
        "observedGeneration": gen,
        "conditions": [_condition("Ready", True, "Ready", "", since, gen)],
    }


def _slinky(obj: dict[str, Any], ready: bool, since: str) -> Status:
    gen = _generation(obj)
    message = "" if ready else f"{obj['kind']} is reconciling"
    status: Status = {
        "conditions": [
            _condition("Ready", ready, "Ready" if ready else "Progressing", message, since, gen)
        ],
    }
    if obj["kind"] in {"NodeSet", "LoginSet"}:
        replicas = int((obj.get("spec") or {}).get("replicas", 1))
        status["replicas"] = replicas
        status["selector"] = f"app.kubernetes.io/instance={obj['metadata']['name']}"
    if obj["kind"] == "NodeSet":
        up = replicas if ready else 0
        status.update(
            {
                "observedGeneration": gen,
                "readyReplicas": up,
                "availableReplicas": up,
                "updatedReplicas": up,
                "unavailableReplicas": replicas - up,
                "slurmIdle": up,
            }
        )
    return status


def _helm_release(obj: dict[str, Any], ready: bool, since: str) -> Status:
    gen = _generation(obj)
    if not ready:
        return {
            "observedGeneration": -1,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "Unknown",
                    "reason": "Progressing",
                    "message": "Reconciliation in progress",
                    "lastTransitionTime": since,
                    "observedGeneration": gen,
                }
            ],
        }
    chart = ((obj.get("spec") or {}).get("chart") or {}).get("spec") or {}
    return {
        "observedGeneration": gen,
        "lastAttemptedRevision": chart.get("version", "0.0.0"),
        "conditions": [
            _condition("Ready", True, "InstallSucceeded", "Helm install succeeded", since, gen),
            _condition("Released", True, "InstallSucceeded", "Helm install succeeded", since, gen),
        ],
    }


def _kueue_queue(obj: dict[str, Any], ready: bool, since: str) -> Status:
    gen = _generation(obj)
    reason, message = (
        ("Ready", "Can admit new workloads")
        if ready
        else ("FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s)")
    )
    return {
        "conditions": [_condition("Active", ready, reason, message, since, gen)],
        "pendingWorkloads": 0,
        "admittedWorkloads": 0,
        "reservingWorkloads": 0,
    }


def _resource_quota(obj: dict[str, Any], ready: bool, since: str) -> Status:
    if not ready:
        return {}
    hard = dict((obj.get("spec") or {}).get("hard") or {})
    return {"hard": hard, "used": dict.fromkeys(hard, "0")}


# --- usage: what the quota controller and Kueue count of the pods that run -------------------


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


def resource_quota_used(hard: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, str]:
    """`status.used` of a ResourceQuota over the namespace's pods, for every key of `hard`."""
    used = dict.fromkeys(hard, Decimal(0))
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


def cluster_queue_flavors_usage(
    queue: dict[str, Any],
    flavor_labels: dict[str, dict[str, str]],
    pods_on_nodes: list[tuple[dict[str, Any], dict[str, str]]],
) -> list[Status]:
    """`status.flavorsUsage` of a ClusterQueue: per flavor, the requests of the selected pods
    whose node carries the flavor's node labels (the first matching flavor of each group)."""
    totals: dict[tuple[str, str], Decimal] = {}
    order: list[tuple[str, list[str]]] = []
    groups = ((queue.get("spec") or {}).get("resourceGroups")) or []
    for group in groups:
        covered = list(group.get("coveredResources") or [])
        for flavor in group.get("flavors") or []:
            order.append((flavor["name"], covered))
            for name in covered:
                totals[(flavor["name"], name)] = Decimal(0)
    for pod, node_labels in pods_on_nodes:
        asked = pod_requests(pod)
        for group in groups:
            covered = list(group.get("coveredResources") or [])
            if not any(name in asked for name in covered):
                continue
            for flavor in group.get("flavors") or []:
                wanted = flavor_labels.get(flavor["name"], {})
                if all(node_labels.get(k) == v for k, v in wanted.items()):
                    for name in covered:
                        totals[(flavor["name"], name)] += asked.get(name, Decimal(0))
                    break
    return [
        {
            "name": name,
            "resources": [
                {"name": r, "total": _format_quantity(totals[(name, r)]), "borrowed": "0"}
                for r in covered
            ],
        }
        for name, covered in order
    ]


CONTROLLERS: dict[tuple[str, str], StatusWriter] = {
    ("v1", "Namespace"): _namespace,
    ("v1", "ResourceQuota"): _resource_quota,
    ("serving.kserve.io/v1beta1", "InferenceService"): _inference_service,
    ("kubevirt.io/v1", "VirtualMachine"): _virtual_machine,
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease"): _helm_release,
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): _kueue_queue,
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"): _kueue_queue,
    **{
        ("slinky.slurm.net/v1beta1", kind): _slinky
        for kind in ("Controller", "NodeSet", "LoginSet", "RestApi", "Accounting")
    },
}


def controller_status(
    obj: dict[str, Any], *, spec_changed_at: datetime, ready_after: timedelta, now: datetime
) -> Status | None:
    """The status the kind's controller reports `now`; None if no controller owns the kind."""
    writer = CONTROLLERS.get((obj.get("apiVersion", ""), obj.get("kind", "")))
    if writer is None:
        return None
    ready = now - spec_changed_at >= ready_after
    since = _iso(spec_changed_at + ready_after if ready else spec_changed_at)
    return writer(obj, ready, since)


def is_ready_helm_release(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "HelmRelease" and any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions", [])
    )


def vcluster_kubeconfig_secret(release: dict[str, Any]) -> dict[str, Any]:
    """The Secret `vc-<release>` the vCluster chart writes, holding the tenant's kubeconfig."""
    meta = release["metadata"]
    name, namespace = meta["name"], meta.get("namespace", "default")
    values = (release.get("spec") or {}).get("values") or {}
    server = (values.get("exportKubeConfig") or {}).get("server") or "https://localhost:8443"
    fake_ca = base64.b64encode(f"simulated CA for {namespace}/{name}".encode()).decode()
    kubeconfig = (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: {name}\n"
        "  cluster:\n"
        f"    server: {server}\n"
        f"    certificate-authority-data: {fake_ca}\n"
        "contexts:\n"
        f"- name: {name}\n"
        "  context:\n"
        f"    cluster: {name}\n"
        f"    user: {name}\n"
        f"current-context: {name}\n"
        "users:\n"
        f"- name: {name}\n"
        "  user:\n"
        f"    token: simulated-{namespace}-{name}\n"
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": f"vc-{name}",
            "namespace": namespace,
            "labels": {"app": "vcluster", "release": name},
        },
        "data": {"config": base64.b64encode(kubeconfig.encode()).decode()},
    }
