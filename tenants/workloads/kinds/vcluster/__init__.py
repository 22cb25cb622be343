"""vCluster: a tenant's own Kubernetes control plane, inside the tenant's namespace.

There is no open-source vCluster CRD. The portal creates a Flux `HelmRepository` (the chart
repository) and a `HelmRelease` of the `vcluster` chart whose values are the vcluster.yaml; Flux
installs the chart, and the control plane, once up, writes its kubeconfig into the Secret
`vc-<release>` (key `config`). Pods created inside the vCluster are synced into the tenant's
namespace and count against its quota, so the vCluster itself only holds its control plane.

Readiness needs both: the HelmRelease Ready and the kubeconfig Secret present. That Secret (and
the control plane's StatefulSet) are made by the chart, not by the portal, and carry none of the
owner labels: `unowned_objects()` names them so the machinery can read them by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from ..base import (
    BuildContext,
    Connection,
    LaunchContext,
    Manifest,
    ObjectKey,
    Observation,
    SpecError,
    condition,
)
from ..spec_input import ALL, SpecFields
from . import access as _access
from . import connection as _connection
from .access import TLS_ROUTE
from .chart import (  # the kind's names, used by the pages and tests through this module
    DEFAULT_VERSION,
    KUBECONFIG_KEY,
    KUBERNETES_IMAGE_TAGS,
    MAX_RELEASE_NAME,
    SECRET,
    SUPPORTED_VERSIONS,
    kubeconfig_from_secret,
    kubeconfig_secret_name,
    release_name,
    repository_name,
    server_url,
)

__all__ = [
    "DEFAULT_VERSION",
    "KIND",
    "KUBECONFIG_KEY",
    "KUBERNETES_IMAGE_TAGS",
    "MAX_RELEASE_NAME",
    "SUPPORTED_VERSIONS",
    "VClusterKind",
    "chart_values",
    "kubeconfig_from_secret",
    "kubeconfig_secret_name",
    "release_name",
    "repository_name",
    "server_url",
]

CHART = "vcluster"
CHART_VERSION = "0.36.1"
CHART_REPOSITORY_URL = "https://charts.loft.sh"
HELM_RELEASE = ("helm.toolkit.fluxcd.io/v2", "HelmRelease")
HELM_REPOSITORY = ("source.toolkit.fluxcd.io/v1", "HelmRepository")
STATEFUL_SET = ("apps/v1", "StatefulSet")

DEFAULT_CPU = 2
MAX_CPU = 32
DEFAULT_MEMORY_GIB = 4
MAX_MEMORY_GIB = 128
# The control plane's embedded database lives on a PersistentVolumeClaim of this size, which
# the tenant's storage quota pays for.
DATA_VOLUME_GIB = 5

FIELDS = ("kubernetes_version", "gpu_scheduling", "cpu", "memory_gib")
SCALABLE = frozenset(FIELDS)
# Ready=False with these reasons means Flux is still at work, not that it failed.
PROGRESS_REASONS = frozenset({"Progressing", "ProgressingWithRetry", "DependencyNotReady"})


# Spec -------------------------------------------------------------------------------------------


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


def _read_version(fields: SpecFields) -> str | None:
    value = fields.spec.get("kubernetes_version")
    if value is None or (isinstance(value, str) and not value.strip()):
        return DEFAULT_VERSION
    choices = ", ".join(SUPPORTED_VERSIONS)
    version = value.strip().removeprefix("v") if isinstance(value, str) else None
    if version not in SUPPORTED_VERSIONS:
        fields.error("kubernetes_version", f"One of {choices}.")
        return None
    return version


def _has_gpu_quota(ctx: LaunchContext) -> bool:
    for key, limit in ctx.quota.items():
        kind = key.partition(":")[0]
        if limit > 0 and (kind == "gpu" or (kind in {"mig", "hami"} and ctx.partitions_allowed)):
            return True
    return False


def _check_upgrade(current: str, wanted: str) -> None:
    """The control plane's stored objects are migrated forward on upgrade: never back, and like
    any Kubernetes cluster one minor at a time."""
    try:
        now, then = _minor(current), _minor(wanted)
    except ValueError:  # a stored version the portal no longer parses: nothing to compare
        return
    if then < now:
        raise SpecError(
            {
                "kubernetes_version": [
                    f"Kubernetes can't be downgraded ({current} → {wanted}): the control plane's"
                    " stored objects were upgraded with it. Create a new vCluster instead."
                ]
            }
        )
    if then[1] - now[1] > 1:
        step = f"{now[0]}.{now[1] + 1}"
        raise SpecError(
            {"kubernetes_version": [f"Upgrade one minor version at a time: {step} first."]}
        )


# Chart values (vcluster.yaml) -------------------------------------------------------------------


def _toleration_text(toleration: Mapping[str, str]) -> str:
    """vcluster's `key=value:Effect` form of a toleration (`key:Effect` for operator Exists)."""
    if toleration.get("operator") == "Exists":
        return f"{toleration['key']}:{toleration['effect']}"
    return f"{toleration['key']}={toleration['value']}:{toleration['effect']}"


def _sync_values(spec: Mapping[str, Any], ctx: BuildContext) -> dict[str, Any]:
    """Where the vCluster's pods may run on the host, and at which priority Kueue admits them.

    Without GPU scheduling its pods carry no toleration, so the taint keeps them off nodes
    reserved for dedicated tenants, and the vCluster sees made-up nodes. With it, the vCluster
    sees the real nodes its pods run on (GPU labels and capacity included); a dedicated tenant's
    pods all get its reserved nodes' selector and toleration, so its GPUs are only ever the ones
    reserved for it (which also puts its CPU-only pods there).

    Kueue admits every pod it syncs through the tenant's LocalQueue `default` (Kueue gives a
    pod without a queue label the namespace's queue of that name), but the open-source syncer
    cannot add Kueue's priority label: the pods get the kind's priority as their Kubernetes
    PriorityClass instead, which Kueue reads when the label is absent.
    """
    pods: dict[str, Any] = {"priorityClassName": ctx.priority_class} if ctx.priority_class else {}
    nodes: dict[str, Any] = {"enabled": False}
    if spec.get("gpu_scheduling"):
        nodes = {"enabled": True, "selector": {"all": False}}
        if ctx.isolation == "dedicated":
            nodes["selector"]["labels"] = ctx.gpu_node_selector(None)
            pods["enforceTolerations"] = [_toleration_text(t) for t in ctx.gpu_tolerations()]
    sync: dict[str, Any] = {"fromHost": {"nodes": nodes}}
    if pods:
        sync["toHost"] = {"pods": pods}
    return sync


def chart_values(spec: Mapping[str, Any], ctx: BuildContext) -> dict[str, Any]:
    """The vcluster.yaml: valid against the chart's own values schema."""
    release = release_name(ctx.name)
    size = {"cpu": str(spec["cpu"]), "memory": f"{spec['memory_gib']}Gi"}
    version = spec.get("kubernetes_version") or DEFAULT_VERSION
    values: dict[str, Any] = {
        "controlPlane": {
            "distro": {"k8s": {"enabled": True, "version": KUBERNETES_IMAGE_TAGS[version]}},
            "statefulSet": {
                # The portal uses no Pro feature: the open-source build, not the default Pro one.
                "image": {"repository": "loft-sh/vcluster-oss"},
                # Requests equal limits: the namespace's quota (which counts requests) then
                # holds exactly what the portal admitted as demand.
                "resources": {"limits": dict(size), "requests": dict(size)},
                "persistence": {
                    "volumeClaim": {
                        "enabled": True,
                        "size": f"{DATA_VOLUME_GIB}Gi",
                        # Deleting the vCluster frees the tenant's storage quota.
                        "retentionPolicy": "Delete",
                    }
                },
            },
        },
        "exportKubeConfig": {"context": release, "server": server_url(release, ctx.namespace)},
        # The tenant's namespace already has its quota and defaults; a second set from the
        # chart would also bind the tenant's other workloads there.
        "policies": {"resourceQuota": {"enabled": False}, "limitRange": {"enabled": False}},
        "sync": _sync_values(spec, ctx),
        "telemetry": {"enabled": False},
    }
    if ctx.priority_labels:
        # Kueue queues the control plane too (its defaulting): at the kind's priority.
        values["controlPlane"]["statefulSet"]["pods"] = {"labels": dict(ctx.priority_labels)}
    if ctx.access.vcluster_domain:
        values = _access.merge_values(values, _access.exposed_values(release, ctx))
    return values


# Status -----------------------------------------------------------------------------------------


def _is(cond: Mapping[str, Any] | None, status: str) -> bool:
    return cond is not None and cond.get("status") == status


def _newest_first(obj: Manifest | None) -> tuple[dict[str, Any], ...]:
    conds = [dict(c) for c in ((obj or {}).get("status") or {}).get("conditions") or []]
    return tuple(sorted(conds, key=lambda c: str(c.get("lastTransitionTime") or ""), reverse=True))


def _history(release: Manifest) -> list[dict[str, Any]]:
    return [s for s in (release.get("status") or {}).get("history") or [] if isinstance(s, dict)]


def _deployed(release: Manifest) -> dict[str, Any] | None:
    """The Helm release now deployed (Helm keeps the old one `deployed` when an upgrade fails)."""
    return next((s for s in _history(release) if s.get("status") == "deployed"), None)


def _failure(release: Manifest) -> tuple[str, str] | None:
    """Flux's reason and message when it failed (it may still retry), else None."""
    ready, stalled = condition(release, "Ready"), condition(release, "Stalled")
    if _is(ready, "False") and ready.get("reason") not in PROGRESS_REASONS:
        message = ready.get("message") or ""
        if _is(stalled, "True") and stalled.get("message"):
            message = f"{message} ({stalled['message']})" if message else stalled["message"]
        return ready.get("reason") or "Failed", message
    if _is(stalled, "True"):
        return stalled.get("reason") or "Stalled", stalled.get("message") or ""
    return None


def _stale(obj: Manifest) -> bool:
    """The controller has not yet seen the latest spec (e.g. right after a scale)."""
    generation = (obj.get("metadata") or {}).get("generation")
    observed = (obj.get("status") or {}).get("observedGeneration")
    return isinstance(generation, int) and isinstance(observed, int) and observed < generation


def _control_plane_down(stateful_set: Manifest | None) -> str:
    """Why the control plane's StatefulSet is not serving, if it is known and it is not."""
    if stateful_set is None:
        return ""
    wanted = (stateful_set.get("spec") or {}).get("replicas", 1)
    ready = (stateful_set.get("status") or {}).get("readyReplicas", 0)
    if isinstance(wanted, int) and isinstance(ready, int) and ready < wanted:
        return f"{ready} of {wanted} control plane pods ready."
    return ""


def _details(
    release: Manifest | None, spec: Mapping[str, Any], name: str, ctx: BuildContext
) -> dict[str, Any]:
    details: dict[str, Any] = {
        "kubernetes_version": spec.get("kubernetes_version") or DEFAULT_VERSION,
        "kubeconfig_secret": kubeconfig_secret_name(name),
        "server": server_url(name, ctx.namespace),
        "chart_version": CHART_VERSION,
    }
    if ctx.access.vcluster_domain:
        details["external_server"] = _access.external_server(name, ctx.namespace, ctx.access)
    if release is None:
        return details
    status = release.get("status") or {}
    deployed = _deployed(release)
    if deployed:
        details["chart_version"] = deployed.get("chartVersion") or CHART_VERSION
        details["helm_revision"] = deployed.get("version")
        details["last_deployed"] = deployed.get("lastDeployed")
    if status.get("lastAttemptedRevision"):
        details["last_attempted_revision"] = status["lastAttemptedRevision"]
    reconciling = condition(release, "Reconciling")
    details["retrying"] = _is(reconciling, "True") and (
        reconciling.get("reason") == "ProgressingWithRetry"
    )
    return details


def _progress(release: Manifest) -> tuple[str, str]:
    reconciling, ready = condition(release, "Reconciling"), condition(release, "Ready")
    if _is(reconciling, "True"):
        return reconciling.get("reason") or "Progressing", reconciling.get("message") or ""
    if ready and ready.get("status") != "True":
        return ready.get("reason") or "Progressing", ready.get("message") or ""
    if _stale(release):
        return "Progressing", "Flux has not reconciled the latest change yet."
    return "Progressing", "Waiting for Flux to install the chart."


# The kind ---------------------------------------------------------------------------------------


class VClusterKind:
    """The `vcluster` workload kind (see `base.WorkloadKind`)."""

    KEY: ClassVar[str] = "vcluster"
    LABEL: ClassVar[str] = "vCluster"
    # The TLSRoute only when vClusters are exposed (VCLUSTER_DOMAIN); pruned when they stop being.
    OWNED_KINDS: ClassVar[tuple[tuple[str, str], ...]] = (HELM_REPOSITORY, HELM_RELEASE, TLS_ROUTE)

    def validate(self, spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
        fields = SpecFields(spec, FIELDS)
        version = _read_version(fields)
        gpu_scheduling = fields.flag("gpu_scheduling", default=False)
        cpu = fields.whole("cpu", default=DEFAULT_CPU, minimum=1, maximum=MAX_CPU)
        memory = fields.whole(
            "memory_gib", default=DEFAULT_MEMORY_GIB, minimum=1, maximum=MAX_MEMORY_GIB
        )
        if gpu_scheduling and not _has_gpu_quota(ctx):
            fields.error(
                "gpu_scheduling",
                "Your tenant has no GPU quota to schedule on: request some first, or leave GPU"
                " scheduling off.",
            )
        fields.raise_errors()
        return {
            "kubernetes_version": version,
            "gpu_scheduling": gpu_scheduling,
            "cpu": cpu,
            "memory_gib": memory,
        }

    def demand(self, spec: Mapping[str, Any]) -> dict[str, int]:
        return {
            f"count:{self.KEY}": 1,
            "cpu": int(spec.get("cpu", DEFAULT_CPU)),
            "memory-gib": int(spec.get("memory_gib", DEFAULT_MEMORY_GIB)),
            "storage-gib": DATA_VOLUME_GIB,
        }

    def manifests(self, spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]:
        release = release_name(ctx.name)
        repository = {
            "apiVersion": HELM_REPOSITORY[0],
            "kind": HELM_REPOSITORY[1],
            "metadata": ctx.metadata(repository_name(release)),
            # The chart version is pinned; the index is only re-read to find a newer pin
            # after a portal upgrade, so an hour is soon enough and spares the chart site.
            "spec": {"url": CHART_REPOSITORY_URL, "interval": "1h"},
        }
        helm_release = {
            "apiVersion": HELM_RELEASE[0],
            "kind": HELM_RELEASE[1],
            "metadata": ctx.metadata(release),
            "spec": {
                "interval": "10m",
                "timeout": "10m",
                "releaseName": release,
                "chart": {
                    "spec": {
                        "chart": CHART,
                        "version": CHART_VERSION,
                        "sourceRef": {"kind": HELM_REPOSITORY[1], "name": repository_name(release)},
                    }
                },
                # A failed first install is uninstalled and retried (nothing to lose yet); a
                # failed upgrade is retried, not rolled back, as Flux advises for StatefulSets.
                "install": {"remediation": {"retries": 3}},
                "upgrade": {"strategy": {"name": "RetryOnFailure", "retryInterval": "5m"}},
                "values": chart_values(spec, ctx),
            },
        }
        if ctx.access.vcluster_domain:
            return [repository, helm_release, _access.tls_route(release, ctx)]
        return [repository, helm_release]

    def unowned_objects(self, spec: Mapping[str, Any], ctx: BuildContext) -> tuple[ObjectKey, ...]:
        """Objects the chart makes without the owner labels that observe/connection also read:
        the kubeconfig Secret and the control plane's StatefulSet (both optional input)."""
        release = release_name(ctx.name)
        return ((*SECRET, kubeconfig_secret_name(release)), (*STATEFUL_SET, release))

    def observe(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Observation:
        release = release_name(ctx.name)
        helm_release = objects.get((*HELM_RELEASE, release))
        repository = objects.get((*HELM_REPOSITORY, repository_name(release)))
        secret = objects.get((*SECRET, kubeconfig_secret_name(release)))
        details = _details(helm_release, spec, release, ctx)
        route_problem = _access.route_problem(objects.get((*TLS_ROUTE, release)))
        if route_problem:
            details["gateway_route"] = route_problem
        if helm_release is None:
            if repository is None:
                return Observation("absent", details=details)
            return Observation(
                "progressing",
                "Pending",
                "The HelmRelease is not created yet.",
                conditions=_newest_first(repository),
                details=details,
            )
        conditions = _newest_first(helm_release)
        found = {"conditions": conditions, "details": details}
        failure = _failure(helm_release)
        if failure:
            state = "degraded" if _deployed(helm_release) else "failed"
            return Observation(state, *failure, **found)
        if not _is(condition(helm_release, "Ready"), "True") or _stale(helm_release):
            return Observation("progressing", *_progress(helm_release), **found)
        if secret is None:
            message = f"Waiting for the control plane to write {kubeconfig_secret_name(release)}."
            return Observation("progressing", "WaitingForKubeconfig", message, **found)
        down = _control_plane_down(objects.get((*STATEFUL_SET, release)))
        if down:
            return Observation("degraded", "ControlPlaneNotReady", down, **found)
        ready = condition(helm_release, "Ready") or {}
        return Observation("ready", ready.get("reason", ""), ready.get("message", ""), **found)

    def scale(
        self, spec: Mapping[str, Any], changes: Mapping[str, Any], ctx: LaunchContext
    ) -> dict[str, Any]:
        if not isinstance(changes, Mapping):
            raise SpecError({ALL: ["The changes are a JSON object of fields."]})
        fixed = {str(key): ["Unknown field."] for key in changes if key not in SCALABLE}
        if fixed:
            raise SpecError(fixed)
        current = spec.get("kubernetes_version") or DEFAULT_VERSION
        wanted = self.validate({**spec, **changes}, ctx)
        _check_upgrade(current, wanted["kubernetes_version"])
        return wanted

    def connection(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Connection:
        return _connection.connection(objects, spec, ctx)

    def gpu_pods(self, spec: Mapping[str, Any], ctx: BuildContext) -> str:
        # vCluster syncs a pod made inside it as `<pod>-x-<its namespace>-x-<release>` (a name
        # past 63 characters becomes a hash, and is not found here).
        return r"[a-z0-9]([-a-z0-9]*[a-z0-9])?-x-[a-z0-9]([-a-z0-9]*[a-z0-9])?" + re.escape(
            f"-x-{release_name(ctx.name)}"
        )


KIND = VClusterKind()
