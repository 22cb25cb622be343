"""Flux for the simulated fleet: the source-controller's HelmRepository and the
helm-controller's HelmRelease statuses, and what the vcluster chart installs (its control plane
StatefulSet and Service, annotated as Helm's) and writes once up (the kubeconfig Secret
`vc-<release>`). Other charts install nothing here. Pure.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from .simulated_clock import Clock, Status, condition, digest, generation, iso
from .simulated_operators import (
    HELM_RELEASE_NAME,
    HELM_RELEASE_NAMESPACE,
    Made,
    Plan,
    by_kind,
    meta_of,
    name_and_namespace,
    owner_reference,
)

Manifest = dict[str, Any]
VCLUSTER_IMAGE_REGISTRY = "ghcr.io"


def helm_repository(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    name, namespace = name_and_namespace(obj)
    gen = generation(obj)
    if not clock.ready:
        building = "building artifact"
        return {
            "observedGeneration": -1,
            "conditions": [
                {**condition("Reconciling", True, "Progressing", building, clock.since, gen)},
                {**condition("Ready", False, "Progressing", building, clock.since, gen),
                 "status": "Unknown"},
            ],
        }
    revision = digest((obj.get("spec") or {}).get("url"), gen)
    where = f"helmrepository/{namespace}/{name}/index-{revision}.yaml"
    stored = f"stored artifact: revision 'sha256:{revision}'"
    return {
        "observedGeneration": gen,
        "url": f"http://source-controller.flux-system.svc.{clock.cluster_domain}./{where}",
        "artifact": {
            "digest": f"sha256:{revision}",
            "lastUpdateTime": clock.since,
            "path": where,
            "revision": f"sha256:{revision}",
            "size": 1_294_112,
            "url": f"http://source-controller.flux-system.svc.{clock.cluster_domain}./{where}",
        },
        "conditions": [
            condition("Ready", True, "Succeeded", stored, clock.since, gen),
            condition("ArtifactInStorage", True, "Succeeded", stored, clock.since, gen),
        ],
    }


def _helm_snapshot(
    obj: Manifest, version: int, status: str, *, first: str, deployed: str
) -> Status:
    name, namespace = name_and_namespace(obj)
    spec = obj.get("spec") or {}
    chart = (spec.get("chart") or {}).get("spec") or {}
    chart_version = chart.get("version", "0.0.0")
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "appVersion": chart_version,
        "chartName": chart.get("chart", name),
        "chartVersion": chart_version,
        "configDigest": f"sha256:{digest(spec.get('values') or {}, version)}",
        "digest": f"sha256:{digest(name, namespace, version, chart_version)}",
        "firstDeployed": first,
        "lastDeployed": deployed,
        "name": spec.get("releaseName") or name,
        "namespace": spec.get("targetNamespace") or namespace,
        "status": status,
        "version": version,
    }


def helm_release(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """Flux's helm-controller: installing (Ready Unknown, Reconciling) until the chart is up,
    then Ready with the release in `history` (Helm's revision counts the spec's changes)."""
    name, namespace = name_and_namespace(obj)
    gen = generation(obj)
    spec = obj.get("spec") or {}
    chart = (spec.get("chart") or {}).get("spec") or {}
    release = f"{spec.get('targetNamespace') or namespace}/{spec.get('releaseName') or name}"
    upgrading = clock.served_before_change and gen > 1
    action = "upgrade" if upgrading else "install"
    status: Status = {
        "helmChart": f"{namespace}/{namespace}-{name}",
        "storageNamespace": spec.get("storageNamespace") or namespace,
        "lastAttemptedGeneration": gen,
        "lastAttemptedReleaseAction": action,
        "lastAttemptedRevision": chart.get("version", "0.0.0"),
        "lastAttemptedConfigDigest": f"sha256:{digest(spec.get('values') or {}, gen)}",
    }
    # The first install finished a delay after the object was made (or, if it was changed
    # before that, a delay after the change).
    first = iso((clock.created_at if upgrading else clock.changed_at) + clock.ready_after)
    if not clock.ready:
        running = f"Running '{action}' action with timeout of {spec.get('timeout') or '5m0s'}"
        status["observedGeneration"] = gen - 1 if upgrading else -1
        status["conditions"] = [
            condition("Reconciling", True, "Progressing", running, clock.since, gen),
            {**condition("Ready", False, "Progressing", running, clock.since, gen),
             "status": "Unknown"},
        ]
        if upgrading:  # the release deployed before the change still serves
            status["history"] = [
                _helm_snapshot(obj, gen - 1, "deployed", first=first, deployed=first)
            ]
        return status
    done = "Upgrade" if upgrading else "Install"
    message = (
        f"Helm {action} succeeded for release {release}.v{gen} with chart "
        f"{chart.get('chart', name)}@{chart.get('version', '0.0.0')}"
    )
    history = [_helm_snapshot(obj, gen, "deployed", first=first, deployed=clock.since)]
    if upgrading:
        history.append(_helm_snapshot(obj, gen - 1, "superseded", first=first, deployed=first))
    return status | {
        "observedGeneration": gen,
        "lastReleaseRevision": gen,
        "history": history,
        "conditions": [
            condition("Ready", True, f"{done}Succeeded", message, clock.since, gen),
            condition("Released", True, f"{done}Succeeded", message, clock.since, gen),
        ],
    }


# --- what the vcluster chart makes ------------------------------------------------------------


def vcluster_kubeconfig_secret(release: Manifest, control_plane: Manifest) -> Manifest:
    """The Secret `vc-<release>` the vCluster control plane writes once it is up: its
    kubeconfig (key `config`, server `exportKubeConfig.server`, context
    `exportKubeConfig.context`) and the certificates it holds, owned by the control plane."""
    meta = meta_of(release)
    name, namespace = meta["name"], meta.get("namespace", "default")
    values = (release.get("spec") or {}).get("values") or {}
    export = values.get("exportKubeConfig") or {}
    server = export.get("server") or "https://localhost:8443"
    context = export.get("context") or name

    def fake(what: str) -> str:
        return base64.b64encode(f"simulated {what} of {namespace}/{name}".encode()).decode()

    ca, cert, key = fake("CA"), fake("client certificate"), fake("client key")
    kubeconfig = (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: {context}\n"
        "  cluster:\n"
        f"    server: {server}\n"
        f"    certificate-authority-data: {ca}\n"
        "contexts:\n"
        f"- name: {context}\n"
        "  context:\n"
        f"    cluster: {context}\n"
        f"    user: {context}\n"
        f"current-context: {context}\n"
        "preferences: {}\n"
        "users:\n"
        f"- name: {context}\n"
        "  user:\n"
        f"    client-certificate-data: {cert}\n"
        f"    client-key-data: {key}\n"
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": f"vc-{name}",
            "namespace": namespace,
            "labels": {"vcluster.loft.sh/kubeconfig": "true"},
            "ownerReferences": [owner_reference(control_plane, controller=False)],
        },
        "data": {
            "config": base64.b64encode(kubeconfig.encode()).decode(),
            "certificate-authority": ca,
            "client-certificate": cert,
            "client-key": key,
        },
    }


def _chart_metadata(release: Manifest, name: str, chart: Manifest) -> Manifest:
    meta = meta_of(release)
    release_name = (release.get("spec") or {}).get("releaseName") or meta["name"]
    return {
        "name": name,
        "namespace": meta.get("namespace", "default"),
        "labels": {
            "app": "vcluster",
            "release": release_name,
            "chart": f"{chart.get('chart', 'vcluster')}-{chart.get('version', '0.0.0')}",
            "heritage": "Helm",
            "app.kubernetes.io/managed-by": "Helm",
        },
        "annotations": {
            HELM_RELEASE_NAME: release_name,
            HELM_RELEASE_NAMESPACE: meta.get("namespace", "default"),
        },
    }


def _vcluster_control_plane(release: Manifest, chart: Manifest) -> list[Manifest]:
    """The chart's StatefulSet `<release>` (the control plane) and its Service (443 → 8443)."""
    name = (release.get("spec") or {}).get("releaseName") or meta_of(release)["name"]
    values = (release.get("spec") or {}).get("values") or {}
    control_plane = values.get("controlPlane") or {}
    stateful_set = control_plane.get("statefulSet") or {}
    repository = (stateful_set.get("image") or {}).get("repository") or "loft-sh/vcluster-pro"
    version = chart.get("version", "0.0.0")
    kubernetes = ((control_plane.get("distro") or {}).get("k8s") or {}).get("version") or ""
    selector = {"app": "vcluster", "release": name}
    volume = (stateful_set.get("persistence") or {}).get("volumeClaim") or {}
    pod_spec: Manifest = {
        "initContainers": [
            {"name": "kubernetes", "image": f"{VCLUSTER_IMAGE_REGISTRY}/loft-sh/kubernetes:"
                                            f"{kubernetes or 'v1.35.0'}"}
        ],
        "containers": [
            {
                "name": "syncer",
                "image": f"{VCLUSTER_IMAGE_REGISTRY}/{repository}:{version}",
                "ports": [{"name": "https", "containerPort": 8443}],
                "resources": stateful_set.get("resources") or {},
            }
        ],
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": _chart_metadata(release, name, chart),
            "spec": {
                "replicas": 1,
                "serviceName": f"{name}-headless",
                "selector": {"matchLabels": selector},
                "template": {"metadata": {"labels": selector}, "spec": pod_spec},
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": volume.get("size", "5Gi")}},
                        },
                    }
                ] if volume.get("enabled", True) else [],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _chart_metadata(release, name, chart),
            "spec": {
                "type": "ClusterIP",
                "selector": selector,
                "ports": [{"name": "https", "port": 443, "targetPort": 8443,
                           "protocol": "TCP"}],
            },
        },
    ]


def plan_helm_release(release: Manifest, clock: Clock, children: Sequence[Manifest]) -> Plan:
    """helm-controller installs the chart; the vcluster chart's control plane comes up and
    writes its kubeconfig Secret. Other charts install nothing here."""
    chart = ((release.get("spec") or {}).get("chart") or {}).get("spec") or {}
    if chart.get("chart") != "vcluster":
        return Plan()
    made = [Made(obj, clock.changed_at, in_step=True)
            for obj in _vcluster_control_plane(release, chart)]
    name = (release.get("spec") or {}).get("releaseName") or meta_of(release)["name"]
    control_plane = by_kind(children, "StatefulSet").get(name)
    secret = by_kind(children, "Secret").get(f"vc-{name}")
    if secret is not None:
        made.append(Made(secret, clock.now))
    elif control_plane is not None and clock.ready:
        made.append(Made(vcluster_kubeconfig_secret(release, control_plane), clock.ready_at))
    return Plan(tuple(made))
