"""The desired state of one tenant (TenantSpec) and the helpers every manifest builder uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from inventory import resource_classes

Manifest = dict[str, Any]
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "ai-factory-portal"
TENANT_LABEL = "portal.ai-factory.io/tenant"
ISOLATION_LABEL = "portal.ai-factory.io/isolation"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

KUEUE = "kueue.x-k8s.io/v1beta2"
LOCAL_QUEUE = "default"
# The LocalQueue of a shared tenant's HAMi shares (its own ClusterQueue: see manifests.kueue).
SHARES_LOCAL_QUEUE = "shares"
# What puts a workload's pods in its tenant's queue (Kueue admits them: quota per flavor,
# borrowing in the cohort, preemption), and at which of the portal's priorities.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
class PriorityClass(NamedTuple):
    name: str  # the WorkloadPriorityClass's, and the Kubernetes PriorityClass's
    description: str


# The portal's WorkloadPriorityClasses, highest first: serving endpoints above interactive
# work (VMs, notebooks) above batch (Slurm, training in a vCluster). Their values are
# settings (KUEUE_PRIORITY_*); a higher value preempts a lower one when quota is short.
PRIORITY_CLASSES: dict[str, PriorityClass] = {
    "serving": PriorityClass(
        "portal-serving",
        "Inference endpoints: preempt interactive and batch work when quota is short."),
    "interactive": PriorityClass(
        "portal-interactive", "VMs and notebooks people work in: preempt batch work."),
    "batch": PriorityClass(
        "portal-batch", "Slurm clusters and training: the first to be preempted."),
}
DEFAULT_FLAVOR = "portal-default"
RESOURCE_QUOTA = "tenant-quota"
LIMIT_RANGE = "tenant-defaults"
NETWORK_POLICY = "tenant-isolation"
ROLE_BINDING = "tenant-edit"
VIEW_ROLE_BINDING = "tenant-view"
PORTAL_ROLE_BINDING = "ai-factory-portal-secrets"

# Workload kinds counted by ResourceQuota object counts (`count/<plural>.<group>`). Notebooks
# have none: each is a plain StatefulSet, and `count/statefulsets.apps` would also count the
# StatefulSets of vClusters (and whatever a tenant runs in them); the portal's admission holds
# them to `count:notebook` alone.
COUNT_RESOURCES: dict[str, str] = {
    "vcluster": "count/helmreleases.helm.toolkit.fluxcd.io",
    "vm": "count/virtualmachines.kubevirt.io",
    "slurm": "count/controllers.slinky.slurm.net",
    "inference": "count/inferenceservices.serving.kserve.io",
}
# HAMi's fractional GPU resources: partitions, so never for a dedicated tenant.
HAMI_RESOURCES = (
    resource_classes.HAMI_MEMORY_RESOURCE,
    resource_classes.HAMI_CORES_RESOURCE,
)


@dataclass(frozen=True)
class Grant:
    """A tenant's quota of one resource class, with its cohort limits."""

    resource: str
    limit: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class LentFlavor:
    """A dedicated tenant's reserved GPUs of one model, lent to its cohort (its owners opted
    in): the flavor a shared member lists to borrow them."""

    lender: str  # the dedicated tenant's slug
    model_key: str


@dataclass(frozen=True)
class EndpointQueue:
    """An inference endpoint whose minimum replicas get a ClusterQueue of their own (see
    manifests.endpoint_queues): what one replica holds, and how many must never be reclaimed."""

    name: str  # the endpoint's (the workload's) name
    resource: str  # its GPU class: gpu:<model> or mig:<model>:<profile>
    per_replica: int  # GPUs (or MIG instances) per replica
    min_replicas: int
    cpu: int  # per replica
    memory_gib: int  # per replica


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
    # Dedicated only: its owners lend its idle reserved GPUs to the cohort.
    lends: bool = False
    # Per resource class: how much the other tenants of the cohort lend at most.
    cohort_lendable: dict[str, int] = field(default_factory=dict)
    # Shared only: the dedicated tenants' flavors it may borrow from (the models it holds).
    lent_flavors: tuple[LentFlavor, ...] = ()
    # Its inference endpoints with a minimum on whole GPUs or MIG, by name.
    endpoint_queues: tuple[EndpointQueue, ...] = ()
    # The value of each of PRIORITY_CLASSES (fleet-wide: every tenant applies the same).
    priorities: dict[str, int] = field(
        default_factory=lambda: {"serving": 1000, "interactive": 500, "batch": 100}
    )
    ingress_namespace: str = "ingress-gateway"
    # Where SSH to the tenant's VMs and Slurm login nodes may come from (their LoadBalancer
    # Services); empty: SSH stays in-cluster, no rule.
    ssh_sources: tuple[str, ...] = ()
    # The namespaces of the fleet's Gateways that publish workloads (inference endpoints,
    # notebooks), whose proxies reach the tenant's pods (Envoy Gateway runs them there by
    # default); empty: none.
    gateway_namespaces: tuple[str, ...] = ()
    edit_role: str = "edit"
    view_role: str = "view"
    # The portal's own ServiceAccount (name, namespace) and the ClusterRole that lets it handle
    # Secrets in this namespace only (it holds no cluster-wide right on Secrets).
    portal_account: tuple[str, str] = ("portal", "ai-factory-portal")
    secrets_role: str = "ai-factory-portal-tenant-secrets"

    @property
    def namespace(self) -> str:
        return f"tenant-{self.slug}"[:63]

    @property
    def dedicated(self) -> bool:
        return self.isolation == "dedicated"

    @property
    def in_cohort(self) -> bool:
        """Its ClusterQueue names the cohort: a shared tenant, or a dedicated one that lends."""
        return bool(self.cohort) and (not self.dedicated or self.lends)

    @property
    def borrows(self) -> bool:
        """It may borrow from the cohort: shared tenants only (a lender never borrows, so
        nothing it runs is ever reclaimed by another)."""
        return bool(self.cohort) and not self.dedicated

    @property
    def cluster_queue(self) -> str:
        return f"tenant-{self.slug}"

    def limit_of(self, resource: str) -> int:
        return next((g.limit for g in self.grants if g.resource == resource), 0)


def object_labels(spec: TenantSpec | None = None) -> dict[str, str]:
    labels = {MANAGED_BY_LABEL: MANAGED_BY}
    if spec is not None:
        labels[TENANT_LABEL] = spec.slug
    return labels


def object_meta(name: str, spec: TenantSpec | None, *, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": object_labels(spec)}
    if namespaced and spec is not None:
        meta["namespace"] = spec.namespace
    return meta


def gib(amount: int) -> str:
    return f"{amount}Gi"


def all_classes() -> list[resource_classes.ResourceClass]:
    return [resource_classes.parse(key) for key in resource_classes.all_keys()]


def mig_resource_names() -> list[str]:
    """Every MIG extended resource any known GPU model offers, sorted."""
    return sorted({rc.kubernetes_resource for rc in all_classes() if rc.kind == "mig"})


def burst_ceiling(grant: Grant, *, lendable: int) -> int:
    """The most a tenant can hold at once: its quota plus what it may borrow from the cohort."""
    borrowable = lendable if grant.borrowing_limit is None else min(grant.borrowing_limit, lendable)
    return grant.limit + max(0, borrowable)


def ceiling(spec: TenantSpec, grant: Grant) -> int:
    if not spec.borrows:
        return grant.limit
    return burst_ceiling(grant, lendable=spec.cohort_lendable.get(grant.resource, 0))
