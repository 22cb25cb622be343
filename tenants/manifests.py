"""What a tenant looks like on the cluster: pure functions from a TenantSpec to manifests.

No ORM and no I/O here: `tenants.enforcement` reads the database into a TenantSpec, these
functions turn it into the objects to server-side apply, in an order a fresh cluster accepts
(Namespace first, flavors and cohort before the ClusterQueue that names them, the ClusterQueue
before the LocalQueue that points at it).

Per tenant: Namespace, ResourceQuota, LimitRange, a default-deny NetworkPolicy, a RoleBinding of
the tenant's Keycloak group to `edit`, Kueue ResourceFlavors (one per GPU model; dedicated
tenants get their own, pinned to their reserved nodes), an optional Cohort, a ClusterQueue and
its LocalQueue.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from inventory import resource_classes
from inventory.node_labels import RESERVED_FOR_KEY

Manifest = dict[str, Any]

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "ai-factory-portal"
TENANT_LABEL = "portal.ai-factory.io/tenant"
ISOLATION_LABEL = "portal.ai-factory.io/isolation"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

KUEUE = "kueue.x-k8s.io/v1beta2"
LOCAL_QUEUE = "default"
DEFAULT_FLAVOR = "portal-default"
RESOURCE_QUOTA = "tenant-quota"
LIMIT_RANGE = "tenant-defaults"
NETWORK_POLICY = "tenant-isolation"
ROLE_BINDING = "tenant-edit"
VIEW_ROLE_BINDING = "tenant-view"

# Workload kinds counted by ResourceQuota object counts (`count/<plural>.<group>`).
COUNT_RESOURCES: dict[str, str] = {
    "vcluster": "count/helmreleases.helm.toolkit.fluxcd.io",
    "vm": "count/virtualmachines.kubevirt.io",
    "slurm": "count/controllers.slinky.slurm.net",
    "inference": "count/inferenceservices.serving.kserve.io",
}
# HAMi's fractional GPU resources: partitions, so never for a dedicated tenant.
HAMI_RESOURCES = ("nvidia.com/gpumem", "nvidia.com/gpucores")


@dataclass(frozen=True)
class Grant:
    """A tenant's quota of one resource class, with its cohort limits."""

    resource: str
    limit: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class TenantSpec:
    """Everything the cluster should hold for one tenant, read from the database."""

    slug: str
    isolation: str  # dedicated | shared
    # Kubernetes group names (the API server's OIDC groups prefix + Keycloak group path).
    edit_groups: tuple[str, ...] = ()
    view_groups: tuple[str, ...] = ()
    grants: tuple[Grant, ...] = ()
    suspended: bool = False
    cohort: str = ""
    # Per resource class: how much the other tenants of the cohort lend at most.
    cohort_lendable: dict[str, int] = field(default_factory=dict)
    ingress_namespace: str = "ingress-gateway"
    edit_role: str = "edit"
    view_role: str = "view"

    @property
    def namespace(self) -> str:
        return f"tenant-{self.slug}"[:63]

    @property
    def dedicated(self) -> bool:
        return self.isolation == "dedicated"

    @property
    def in_cohort(self) -> bool:
        return bool(self.cohort) and not self.dedicated

    @property
    def cluster_queue(self) -> str:
        return f"tenant-{self.slug}"

    def limit_of(self, resource: str) -> int:
        return next((g.limit for g in self.grants if g.resource == resource), 0)


def _labels(spec: TenantSpec | None = None) -> dict[str, str]:
    labels = {MANAGED_BY_LABEL: MANAGED_BY}
    if spec is not None:
        labels[TENANT_LABEL] = spec.slug
    return labels


def _meta(name: str, spec: TenantSpec | None, *, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": _labels(spec)}
    if namespaced and spec is not None:
        meta["namespace"] = spec.namespace
    return meta


def _gib(amount: int) -> str:
    return f"{amount}Gi"


def _classes() -> list[resource_classes.ResourceClass]:
    return [resource_classes.parse(key) for key in resource_classes.all_keys()]


def mig_resource_names() -> list[str]:
    """Every MIG extended resource any known GPU model offers, sorted."""
    return sorted({rc.kubernetes_resource for rc in _classes() if rc.kind == "mig"})


def burst_ceiling(grant: Grant, *, lendable: int) -> int:
    """The most a tenant can hold at once: its quota plus what it may borrow from the cohort."""
    borrowable = lendable if grant.borrowing_limit is None else min(grant.borrowing_limit, lendable)
    return grant.limit + max(0, borrowable)


def _ceiling(spec: TenantSpec, grant: Grant) -> int:
    if not spec.in_cohort:
        return grant.limit
    return burst_ceiling(grant, lendable=spec.cohort_lendable.get(grant.resource, 0))


# --- core objects -----------------------------------------------------------------------------


def namespace_manifest(spec: TenantSpec) -> Manifest:
    labels = _labels(spec) | {
        ISOLATION_LABEL: spec.isolation,
        "pod-security.kubernetes.io/enforce": "baseline",
    }
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": spec.namespace, "labels": labels},
    }


def resource_quota_hard(spec: TenantSpec) -> dict[str, str]:
    """ResourceQuota `hard`: every GPU and MIG resource, CPU, memory, storage and counts.

    What is not granted is 0, so a new resource or a forgotten grant is denied, not unlimited.
    In a cohort, GPU ceilings include what the tenant may borrow (Kueue meters the borrowing).
    """
    gpus: dict[str, int] = defaultdict(int)
    gpus[resource_classes.GPU_RESOURCE] = 0
    for name in mig_resource_names():
        gpus[name] = 0
    scalars = {"cpu": 0, "memory-gib": 0, "storage-gib": 0}
    counts = dict.fromkeys(COUNT_RESOURCES, 0)
    for grant in spec.grants:
        rc = resource_classes.parse(grant.resource)
        if rc.kind in {"gpu", "mig"}:
            if rc.kind == "mig" and spec.dedicated:
                continue  # partitions only inside one trust domain
            gpus[rc.kubernetes_resource] += _ceiling(spec, grant)
        elif rc.kind == "scalar":
            scalars[rc.key] = grant.limit
        elif rc.kind == "count":
            counts[rc.key.split(":", 1)[1]] = grant.limit
    hard = {f"requests.{name}": str(amount) for name, amount in sorted(gpus.items())}
    if spec.dedicated:
        hard |= {f"requests.{name}": "0" for name in HAMI_RESOURCES}
    hard |= {
        "requests.cpu": str(scalars["cpu"]),
        "requests.memory": _gib(scalars["memory-gib"]),
        "requests.storage": _gib(scalars["storage-gib"]),
    }
    hard |= {COUNT_RESOURCES[kind]: str(amount) for kind, amount in counts.items()}
    return hard


def resource_quota_manifest(spec: TenantSpec) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": _meta(RESOURCE_QUOTA, spec),
        "spec": {"hard": resource_quota_hard(spec)},
    }


def limit_range_manifest(spec: TenantSpec) -> Manifest:
    # Defaults let pods without requests start under a quota that counts requests.
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": _meta(LIMIT_RANGE, spec),
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "default": {"cpu": "1", "memory": "2Gi"},
                    "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
                },
                {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
            ]
        },
    }


def network_policy_manifest(spec: TenantSpec) -> Manifest:
    """Default deny: traffic only inside the tenant, in from the ingress gateway, out to DNS."""
    same_tenant = {"podSelector": {}}
    ingress_gateway = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: spec.ingress_namespace}}
    }
    cluster_dns = {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(NETWORK_POLICY, spec),
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [same_tenant]}, {"from": [ingress_gateway]}],
            "egress": [
                {"to": [same_tenant]},
                {
                    "to": [cluster_dns],
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                },
            ],
        },
    }


def _binding(name: str, role: str, groups: tuple[str, ...], spec: TenantSpec) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(name, spec),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}
            for group in groups
        ],
    }


def role_binding_manifests(spec: TenantSpec) -> list[Manifest]:
    """Owners and members edit the namespace; viewers only read it."""
    return [
        _binding(ROLE_BINDING, spec.edit_role, spec.edit_groups, spec),
        _binding(VIEW_ROLE_BINDING, spec.view_role, spec.view_groups, spec),
    ]


# --- Kueue ------------------------------------------------------------------------------------


def _granted_gpu_models(spec: TenantSpec) -> list[str]:
    models = []
    for key in resource_classes.GPU_MODELS:
        if any(
            (rc := resource_classes.parse(g.resource)).gpu_model is not None
            and rc.gpu_model.key == key
            and not (rc.kind == "mig" and spec.dedicated)
            for g in spec.grants
        ):
            models.append(key)
    return models


def flavor_name(spec: TenantSpec, model_key: str) -> str:
    return f"gpu-{model_key}-reserved-{spec.slug}" if spec.dedicated else f"gpu-{model_key}"


def scheduling_for(spec: TenantSpec) -> dict[str, Any]:
    """Node selector and tolerations that put a dedicated tenant's pods on its reserved nodes."""
    if not spec.dedicated:
        return {"nodeSelector": {}, "tolerations": []}
    return {
        "nodeSelector": {RESERVED_FOR_KEY: spec.slug},
        "tolerations": [
            {
                "key": RESERVED_FOR_KEY,
                "operator": "Equal",
                "value": spec.slug,
                "effect": "NoSchedule",
            }
        ],
    }


def resource_flavor_manifests(spec: TenantSpec) -> list[Manifest]:
    flavors = [
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": _meta(DEFAULT_FLAVOR, None, namespaced=False),
            "spec": {},
        }
    ]
    for model_key in _granted_gpu_models(spec):
        model = resource_classes.GPU_MODELS[model_key]
        flavor_spec: dict[str, Any] = {
            "nodeLabels": {resource_classes.GPU_PRODUCT_LABEL: model.product_label}
        }
        if spec.dedicated:
            scheduling = scheduling_for(spec)
            flavor_spec["nodeLabels"] |= scheduling["nodeSelector"]
            flavor_spec["nodeTaints"] = [
                {"key": RESERVED_FOR_KEY, "value": spec.slug, "effect": "NoSchedule"}
            ]
            flavor_spec["tolerations"] = scheduling["tolerations"]
        flavors.append(
            {
                "apiVersion": KUEUE,
                "kind": "ResourceFlavor",
                "metadata": _meta(
                    flavor_name(spec, model_key), spec if spec.dedicated else None, namespaced=False
                ),
                "spec": flavor_spec,
            }
        )
    return flavors


def cohort_manifest(spec: TenantSpec) -> Manifest | None:
    if not spec.in_cohort:
        return None
    return {
        "apiVersion": KUEUE,
        "kind": "Cohort",
        "metadata": _meta(spec.cohort, None, namespaced=False),
        "spec": {},
    }


def _quota_cell(spec: TenantSpec, name: str, nominal: int | str, grant: Grant | None) -> dict:
    cell: dict[str, Any] = {"name": name, "nominalQuota": str(nominal)}
    if spec.in_cohort and name not in {"cpu", "memory"}:
        # No quota line, nothing to borrow; a line without a limit borrows freely.
        if grant is None:
            cell["borrowingLimit"] = "0"
        elif grant.borrowing_limit is not None:
            cell["borrowingLimit"] = str(grant.borrowing_limit)
        if grant is not None and grant.lending_limit is not None:
            cell["lendingLimit"] = str(grant.lending_limit)
    return cell


def cluster_queue_manifest(spec: TenantSpec) -> Manifest:
    grants = {g.resource: g for g in spec.grants}
    groups: list[dict[str, Any]] = [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": DEFAULT_FLAVOR,
                    "resources": [
                        _quota_cell(spec, "cpu", spec.limit_of("cpu"), None),
                        _quota_cell(spec, "memory", _gib(spec.limit_of("memory-gib")), None),
                    ],
                }
            ],
        }
    ]
    models = _granted_gpu_models(spec)
    if models:
        covered = [resource_classes.GPU_RESOURCE]
        if not spec.dedicated:
            covered += sorted(
                {
                    resource_classes.parse(g.resource).kubernetes_resource
                    for g in spec.grants
                    if resource_classes.parse(g.resource).kind == "mig"
                }
            )
        flavors = []
        for model_key in models:
            cells = []
            for name in covered:  # every flavor lists exactly the covered resources (CEL)
                if name == resource_classes.GPU_RESOURCE:
                    key = resource_classes.gpu_class(model_key)
                else:
                    key = f"mig:{model_key}:{name.removeprefix('nvidia.com/mig-')}"
                grant = grants.get(key)
                cells.append(_quota_cell(spec, name, grant.limit if grant else 0, grant))
            flavors.append({"name": flavor_name(spec, model_key), "resources": cells})
        groups.append({"coveredResources": covered, "flavors": flavors})
    cq_spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {TENANT_LABEL: spec.slug}},
        "queueingStrategy": "BestEffortFIFO",
        # A suspended tenant's running work finishes; nothing new is admitted.
        "stopPolicy": "Hold" if spec.suspended else "None",
        "resourceGroups": groups,
    }
    if spec.in_cohort:
        cq_spec["cohortName"] = spec.cohort
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": _meta(spec.cluster_queue, spec, namespaced=False),
        "spec": cq_spec,
    }


def local_queue_manifest(spec: TenantSpec) -> Manifest:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": _meta(LOCAL_QUEUE, spec),
        "spec": {"clusterQueue": spec.cluster_queue},
    }


def tenant_manifests(spec: TenantSpec) -> list[Manifest]:
    """Every object the tenant needs, in the order to apply them."""
    manifests = [
        namespace_manifest(spec),
        resource_quota_manifest(spec),
        limit_range_manifest(spec),
        network_policy_manifest(spec),
        *role_binding_manifests(spec),
        *resource_flavor_manifests(spec),
    ]
    cohort = cohort_manifest(spec)
    if cohort is not None:
        manifests.append(cohort)
    manifests += [cluster_queue_manifest(spec), local_queue_manifest(spec)]
    return manifests


def differs(desired: Any, live: Any) -> bool:
    """True if `live` lacks something `desired` sets (server defaults in `live` are fine)."""
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return True
        return any(differs(value, live.get(key)) for key, value in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return True
        return any(differs(d, lv) for d, lv in zip(desired, live, strict=True))
    return not _same_scalar(desired, live)


def _same_scalar(desired: Any, live: Any) -> bool:
    if desired == live or (live is not None and str(desired) == str(live)):
        return True
    # An API server canonicalises quantities ("2048Gi" comes back as "2Ti").
    try:
        return parse_quantity(desired) == parse_quantity(live)
    except (ValueError, TypeError, ArithmeticError):
        return False


def drifted_fields(desired: Manifest, live: Manifest | None) -> list[str]:
    """The top-level sections (and labels) of `desired` that the live object no longer matches."""
    if live is None:
        return ["<missing>"]
    fields = [
        key
        for key, value in desired.items()
        if key not in {"apiVersion", "kind", "metadata", "status"} and differs(value, live.get(key))
    ]
    labels = desired.get("metadata", {}).get("labels") or {}
    if differs(labels, (live.get("metadata") or {}).get("labels") or {}):
        fields.append("metadata.labels")
    return fields
