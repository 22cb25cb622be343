"""Slinky's slurm-operator 1.2 for the simulated fleet: its CRs' statuses (a Ready condition; a
NodeSet counts its worker pods), and what it runs for them: slurmctld's StatefulSet
`<controller>-controller`, the login Deployment `<loginset>` and its Service (port 22),
slurmrestd's Deployment `<restapi>-restapi`, slurmdbd's StatefulSet `<accounting>-accounting`
and a worker pod `<nodeset>-<ordinal>` per replica, labelled from the CRs' templates (the
portal's owner labels among them) and owned by their CR. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .simulated_apps import pod_ready
from .simulated_clock import Clock, Status, condition, digest, generation
from .simulated_operators import Made, Plan, by_kind, meta_of, name_and_namespace, owner_reference

Manifest = dict[str, Any]
SLINKY = "slinky.slurm.net/v1beta1"
KINDS = ("Controller", "NodeSet", "LoginSet", "RestApi", "Accounting")


def slinky_status(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """The Slinky operator's CRs: a Ready condition once reconciled; a NodeSet counts its
    worker pods (ready, available, and Slurm's idle nodes)."""
    name, _ = name_and_namespace(obj)
    gen = generation(obj)
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    ready = clock.ready
    message = "" if ready else f"{kind} is reconciling"
    status: Status = {
        "conditions": [
            condition("Ready", ready, "Ready" if ready else "Progressing", message, clock.since,
                      gen)
        ],
    }
    if kind == "LoginSet":
        status["replicas"] = int(spec.get("replicas", 1))
        status["selector"] = f"app.kubernetes.io/instance={name},app.kubernetes.io/name=login"
    if kind == "NodeSet":
        pods = [child for child in children if child.get("kind") == "Pod"]
        up = sum(1 for pod in pods if pod_ready(pod))
        status.update(
            {
                "observedGeneration": gen,
                "replicas": len(pods),
                "desired": int(spec.get("replicas", 1)),
                "readyReplicas": up,
                "availableReplicas": up,
                "updatedReplicas": len(pods),
                "unavailableReplicas": max(0, int(spec.get("replicas", 1)) - up),
                "nodeSetHash": digest(spec.get("template"), spec.get("slurmd"))[:9],
                "selector": f"app.kubernetes.io/instance={name},app.kubernetes.io/name=slurmd",
                "ordinalToNode": {
                    name_and_namespace(pod)[0].rsplit("-", 1)[-1]: pod["spec"]["nodeName"]
                    for pod in pods
                    if (pod.get("spec") or {}).get("nodeName")
                },
                "slurmIdle": up,
                "slurmAllocated": 0,
                "slurmDown": 0,
                "slurmDrain": 0,
            }
        )
    return status


# --- what the operator runs ------------------------------------------------------------------


def _container(name: str, part: Manifest | None) -> Manifest:
    part = part or {}
    container: Manifest = {"name": name, "image": part.get("image", "")}
    if part.get("resources"):
        container["resources"] = part["resources"]
    return container


def _slinky_labels(cr: Manifest, app: str, instance: str) -> dict[str, str]:
    """The CR's template labels (the portal's owner labels among them) and the operator's."""
    template = ((cr.get("spec") or {}).get("template") or {}).get("metadata") or {}
    return {
        **(template.get("labels") or {}),
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/instance": instance,
        "app.kubernetes.io/part-of": "slurm",
    }


def _slinky_app(cr: Manifest, kind: str, name: str, app: str, containers: list[Manifest],
                replicas: int) -> Manifest:
    meta = meta_of(cr)
    labels = _slinky_labels(cr, app, meta["name"])
    pod = dict(((cr.get("spec") or {}).get("template") or {}).get("spec") or {})
    spec: Manifest = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app.kubernetes.io/name": app,
                                     "app.kubernetes.io/instance": meta["name"]}},
        "template": {"metadata": {"labels": labels}, "spec": {**pod, "containers": containers}},
    }
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace", "default"),
            "labels": labels,
            "ownerReferences": [owner_reference(cr)],
        },
        "spec": spec,
    }


def plan_slinky(cr: Manifest, clock: Clock, children: Sequence[Manifest]) -> Plan:
    """The Slinky operator: slurmctld's StatefulSet `<controller>-controller`, the login
    Deployment `<loginset>`, slurmrestd's Deployment `<restapi>-restapi`, slurmdbd's StatefulSet
    `<accounting>-accounting`, and a NodeSet's worker pods `<nodeset>-<ordinal>`."""
    name, kind = meta_of(cr)["name"], cr.get("kind")
    spec = cr.get("spec") or {}
    replicas = spec.get("replicas", 1) if isinstance(spec.get("replicas", 1), int) else 1
    if kind == "NodeSet":
        return _plan_nodeset(cr, clock, children)
    apps = {
        "Controller": ("StatefulSet", f"{name}-controller", "slurmctld", 1,
                       [_container("slurmctld", spec.get("slurmctld")),
                        _container("reconfigure", spec.get("reconfigure")),
                        _container("logfile", spec.get("logfile"))]),
        "LoginSet": ("Deployment", name, "login", replicas,
                     [_container("login", spec.get("login"))]),
        "RestApi": ("Deployment", f"{name}-restapi", "slurmrestd", replicas,
                    [_container("slurmrestd", spec.get("slurmrestd"))]),
        "Accounting": ("StatefulSet", f"{name}-accounting", "slurmdbd", 1,
                       [_container("slurmdbd", spec.get("slurmdbd"))]),
    }
    if kind not in apps:
        return Plan()
    app_kind, app_name, app, count, containers = apps[kind]
    made = [Made(_slinky_app(cr, app_kind, app_name, app, containers, count),
                 clock.changed_at, in_step=True)]
    if kind == "LoginSet":
        made.append(Made(_login_service(cr), clock.changed_at, in_step=True))
    return Plan(tuple(made))


def _login_service(loginset: Manifest) -> Manifest:
    """The login node's Service `<loginset>` on port 22, from the LoginSet's `service` template
    (its metadata and ServiceSpec merged into the operator's)."""
    meta = meta_of(loginset)
    template = (loginset.get("spec") or {}).get("service") or {}
    selector = {"app.kubernetes.io/name": "login", "app.kubernetes.io/instance": meta["name"]}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", "default"),
            "labels": {**((template.get("metadata") or {}).get("labels") or {}), **selector},
            "ownerReferences": [owner_reference(loginset)],
        },
        "spec": {
            "type": "ClusterIP",
            **(template.get("spec") or {}),
            "selector": selector,
            "ports": [{"name": "ssh", "protocol": "TCP", "port": 22, "targetPort": 22}],
        },
    }


def _plan_nodeset(nodeset: Manifest, clock: Clock, children: Sequence[Manifest]) -> Plan:
    """A worker pod per replica (ordinal `0..replicas-1`); a scale-down removes the highest.
    A worker that is missing though the NodeSet had it (evicted, deleted) starts again now."""
    meta, spec = meta_of(nodeset), nodeset.get("spec") or {}
    replicas = spec.get("replicas", 1) if isinstance(spec.get("replicas", 1), int) else 1
    had = int(((nodeset.get("status") or {}).get("replicas")) or 0)
    pods = by_kind(children, "Pod")
    template = spec.get("template") or {}
    pod_spec = dict(template.get("spec") or {})
    hostname = pod_spec.pop("hostname", "")
    made = []
    for ordinal in range(replicas):
        name = f"{meta['name']}-{ordinal}"
        if name in pods:
            made.append(Made(pods[name], clock.now))
            continue
        labels = _slinky_labels(nodeset, "slurmd", meta["name"])
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": meta.get("namespace", "default"),
                "labels": labels,
                "ownerReferences": [owner_reference(nodeset)],
            },
            "spec": {
                **pod_spec,
                "hostname": f"{hostname}{ordinal}" if hostname else name,
                "containers": [_container("slurmd", spec.get("slurmd")),
                               _container("logfile", spec.get("logfile"))],
            },
        }
        made.append(Made(pod, clock.now if ordinal < had else clock.changed_at))
    return Plan(tuple(made), frozenset({("v1", "Pod")}))
