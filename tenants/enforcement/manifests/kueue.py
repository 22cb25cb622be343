"""Kueue objects of a tenant: ResourceFlavors, an optional Cohort, the ClusterQueue and its
LocalQueue.

HAMi shares stay out of the ClusterQueue, on purpose. Kueue would meter them wrongly: it
counts a HAMi pod's `nvidia.com/gpu` (one vGPU) as a whole GPU of the model's flavor, and sums
`nvidia.com/gpumem` per container without multiplying it by the container's vGPUs or filling
in HAMi's default (all of a GPU's memory); and lending a share through a cohort means nothing
to HAMi's scheduler, which enforces the namespace's own limits. So a shared tenant's HAMi
grants are enforced by its ResourceQuota (`core.resource_quota_hard`: the `limits.` keys HAMi's
scheduler reads, the `requests.` keys the API server reads) and per GPU model by the portal's
admission. A job sent to the tenant's LocalQueue that asks for HAMi resources stays pending
("resource nvidia.com/gpumem unavailable in ClusterQueue"): HAMi shares are for pods that do
not queue through Kueue, such as the portal's inference endpoints. A model granted only as HAMi
shares gets no flavor either.
"""

from __future__ import annotations

from typing import Any

from inventory import resource_classes
from inventory.node_labels import RESERVED_FOR_KEY

from .spec import (
    DEFAULT_FLAVOR,
    KUEUE,
    LOCAL_QUEUE,
    PRIORITY_CLASSES,
    TENANT_LABEL,
    Grant,
    Manifest,
    TenantSpec,
    gib,
    object_meta,
)


def _granted_gpu_models(spec: TenantSpec) -> list[str]:
    models = []
    for key in resource_classes.GPU_MODELS:
        if any(
            (rc := resource_classes.parse(g.resource)).gpu_model is not None
            and rc.gpu_model.key == key
            and rc.kind in {"gpu", "mig"}  # HAMi shares are not Kueue's (see above)
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
            "metadata": object_meta(DEFAULT_FLAVOR, None, namespaced=False),
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
                "metadata": object_meta(
                    flavor_name(spec, model_key), spec if spec.dedicated else None, namespaced=False
                ),
                "spec": flavor_spec,
            }
        )
    return flavors


def priority_class_manifests(spec: TenantSpec) -> list[Manifest]:
    """The portal's WorkloadPriorityClasses (cluster-wide: every tenant applies the same)."""
    return [
        {
            "apiVersion": KUEUE,
            "kind": "WorkloadPriorityClass",
            "metadata": object_meta(priority.name, None, namespaced=False),
            "value": spec.priorities[key],
            "description": priority.description,
        }
        for key, priority in PRIORITY_CLASSES.items()
    ]


def pod_priority_class_manifests(spec: TenantSpec) -> list[Manifest]:
    """Kubernetes PriorityClasses of the same names and values, for pods that cannot carry
    Kueue's priority label: Kueue takes a pod's priority from its `priorityClassName` when the
    label is absent, and the pods a vCluster syncs get theirs from its chart values
    (`sync.toHost.pods.priorityClassName`). They never preempt in the scheduler
    (`preemptionPolicy: Never`): preemption is Kueue's, by its rules."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": object_meta(priority.name, None, namespaced=False),
            "value": spec.priorities[key],
            "globalDefault": False,
            "preemptionPolicy": "Never",
            "description": priority.description,
        }
        for key, priority in PRIORITY_CLASSES.items()
    ]


def preemption(spec: TenantSpec) -> dict[str, Any]:
    """Who gives way when the queue's quota is short. Inside the tenant's queue, work of a
    lower priority. In a cohort, a tenant takes back the quota it lent, whatever the priority
    of the borrowers (Kueue picks the lowest first), and a borrower may displace another
    borrower of a lower priority. A dedicated tenant is in no cohort: nothing it runs is ever
    reclaimed by another."""
    rules: dict[str, Any] = {"withinClusterQueue": "LowerPriority"}
    if spec.in_cohort:
        rules |= {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}
    return rules


def cohort_manifest(spec: TenantSpec) -> Manifest | None:
    if not spec.in_cohort:
        return None
    return {
        "apiVersion": KUEUE,
        "kind": "Cohort",
        "metadata": object_meta(spec.cohort, None, namespaced=False),
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
                        _quota_cell(spec, "memory", gib(spec.limit_of("memory-gib")), None),
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
        "preemption": preemption(spec),
    }
    if spec.in_cohort:
        cq_spec["cohortName"] = spec.cohort
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": object_meta(spec.cluster_queue, spec, namespaced=False),
        "spec": cq_spec,
    }


def local_queue_manifest(spec: TenantSpec) -> Manifest:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": object_meta(LOCAL_QUEUE, spec),
        "spec": {"clusterQueue": spec.cluster_queue},
    }
