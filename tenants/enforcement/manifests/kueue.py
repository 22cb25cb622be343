"""Kueue objects of a tenant: ResourceFlavors, an optional Cohort, the ClusterQueue and its
LocalQueue; and, for a shared tenant holding HAMi shares, a second ClusterQueue and LocalQueue.

HAMi shares queue apart, in `<cluster queue>-shares` (LocalQueue `shares`), in no cohort: HAMi's
scheduler enforces the namespace's own limits, so lending a share to another tenant would mean
nothing to it, and nothing is lent or borrowed. Its one GPU resource group covers
`nvidia.com/gpu` (vGPUs), `nvidia.com/gpumem` (MiB) and `nvidia.com/gpucores` (percent), with one
flavor per GPU model the tenant holds HAMi quota for (`hami-<model>`: the model's GPU Feature
Discovery product label and HAMi's node label). Kueue sums each resource over a pod's
containers, which is right for the portal's HAMi replicas: each asks for exactly one vGPU with
explicit gpumem and gpucores, so the sum is what HAMi reserves (Kueue would miscount a pod of
several vGPUs per container, whose gpumem HAMi multiplies, or one naming no gpumem, which HAMi
fills with a whole GPU's memory: such pods do not belong in this queue). The vGPU count is
bounded by the compute grant over HAMI_MIN_CORES, the smallest share the portal launches, so it
never binds before memory or compute. Being its own ClusterQueue, a whole-GPU pod (queue
`default`) never lands in a HAMi flavor, nor a share in a whole-GPU one. The queue covers CPU and
memory too (Kueue admits no pod asking for a resource its ClusterQueue lacks), with the tenant's
whole grant: both queues see all of it, and the namespace's ResourceQuota caps what they hold
together, as it does for pods no queue admits.

HAMi grants are also enforced by the tenant's ResourceQuota (`core.resource_quota_hard`: the
`limits.` keys HAMi's scheduler reads, the `requests.` keys the API server reads) and per GPU
model by the portal's admission. The main ClusterQueue covers no HAMi resource: a job sent to
`default` that asks for one stays pending ("resource nvidia.com/gpumem unavailable in
ClusterQueue"). A dedicated tenant has no HAMi queue: no partitions outside one trust domain.

A VM's GPUs are passed through: its launcher pod asks for a device-plugin resource named per
model (`resource_classes.PASSTHROUGH_RESOURCES`, e.g. `nvidia.com/GH100_H100_SXM5_80GB`), and
passthrough nodes carry no GPU product label, so the per-model flavors cannot hold them. One
more resource group covers the passthrough resources of the models the tenant holds whole GPUs
of, in one flavor of their own (`gpu-passthrough`, no node labels: the resource name already
names the model; a dedicated tenant's is on its reserved nodes), each with the nominal quota,
borrowing and lending limits of the model's `gpu:<model>` grant. Kueue meters a model's VM GPUs
apart from its containers' GPUs, so each may reach the grant: the sum is held by the portal's
admission at launch; the namespace's ResourceQuota gives each passthrough resource its model's
whole-GPU ceiling too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from inventory import resource_classes
from inventory.node_labels import RESERVED_FOR_KEY

from .spec import (
    DEFAULT_FLAVOR,
    KUEUE,
    LOCAL_QUEUE,
    PRIORITY_CLASSES,
    SHARES_LOCAL_QUEUE,
    TENANT_LABEL,
    Grant,
    LentFlavor,
    Manifest,
    TenantSpec,
    gib,
    object_meta,
)

# Kueue's limit on a resource group's flavors (the ClusterQueue CRD's maxItems).
MAX_FLAVORS = 64


def _granted_gpu_models(spec: TenantSpec) -> list[str]:
    models = []
    for key in resource_classes.GPU_MODELS:
        if any(
            (rc := resource_classes.parse(g.resource)).gpu_model is not None
            and rc.gpu_model.key == key
            and rc.kind in {"gpu", "mig"}  # HAMi shares queue apart (see above)
            and not (rc.kind == "mig" and spec.dedicated)
            for g in spec.grants
        ):
            models.append(key)
    return models


def flavor_name(spec: TenantSpec, model_key: str) -> str:
    return f"gpu-{model_key}-reserved-{spec.slug}" if spec.dedicated else f"gpu-{model_key}"


def _reserved_flavor_spec(spec: TenantSpec) -> dict[str, Any]:
    """What a dedicated tenant's flavors add: its reserved nodes' label, taint and toleration."""
    scheduling = scheduling_for(spec)
    return {
        "nodeLabels": scheduling["nodeSelector"],
        "nodeTaints": [{"key": RESERVED_FOR_KEY, "value": spec.slug, "effect": "NoSchedule"}],
        "tolerations": scheduling["tolerations"],
    }


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


def _gpu_flavor(spec: TenantSpec, model_key: str) -> Manifest:
    model = resource_classes.GPU_MODELS[model_key]
    flavor_spec: dict[str, Any] = {
        "nodeLabels": {resource_classes.GPU_PRODUCT_LABEL: model.product_label}
    }
    if spec.dedicated:
        # Kueue adds the tolerations to the pods it admits into the flavor: a shared tenant's
        # pod borrowing a lender's reserved GPUs lands on the reserved nodes too.
        reserved = _reserved_flavor_spec(spec)
        flavor_spec = {**reserved,
                       "nodeLabels": flavor_spec["nodeLabels"] | reserved["nodeLabels"]}
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": object_meta(
            flavor_name(spec, model_key), spec if spec.dedicated else None, namespaced=False
        ),
        "spec": flavor_spec,
    }


def _lender(lent: LentFlavor) -> TenantSpec:
    return TenantSpec(slug=lent.lender, isolation="dedicated")


def borrowable_flavors(spec: TenantSpec) -> list[LentFlavor]:
    """The dedicated lenders' flavors a shared tenant lists (of the models it holds), as many
    as a resource group has room for beside its own."""
    models = _granted_gpu_models(spec)
    if not spec.borrows:
        return []
    lent = [f for f in spec.lent_flavors if f.model_key in models]
    return lent[: max(0, MAX_FLAVORS - len(models))]


def resource_flavor_manifests(spec: TenantSpec) -> list[Manifest]:
    """The default flavor, one per GPU model granted, and the lenders' flavors a shared tenant
    borrows from (the same objects their lenders apply: its ClusterQueue never names a flavor
    that does not exist yet, which would stop Kueue admitting into it)."""
    flavors = [
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": object_meta(DEFAULT_FLAVOR, None, namespaced=False),
            "spec": {},
        }
    ]
    flavors += [_gpu_flavor(spec, model_key) for model_key in _granted_gpu_models(spec)]
    flavors += [_gpu_flavor(_lender(lent), lent.model_key) for lent in borrowable_flavors(spec)]
    if passthrough := passthrough_flavor_manifest(spec):
        flavors.append(passthrough)
    return flavors


# --- VMs' passthrough GPUs (see the module docstring) -------------------------------------------

PASSTHROUGH_FLAVOR = "gpu-passthrough"


def _passthrough_models(spec: TenantSpec) -> list[str]:
    """The models the tenant holds whole GPUs of that a VM can have passed through."""
    granted = {g.resource for g in spec.grants}
    return [key for key in resource_classes.PASSTHROUGH_RESOURCES
            if resource_classes.gpu_class(key) in granted]


def passthrough_flavor_name(spec: TenantSpec) -> str:
    return f"{PASSTHROUGH_FLAVOR}-reserved-{spec.slug}" if spec.dedicated else PASSTHROUGH_FLAVOR


def passthrough_flavor_manifest(spec: TenantSpec) -> Manifest | None:
    """The flavor of VMs' passthrough GPUs (None: the tenant holds no whole GPU)."""
    if not _passthrough_models(spec):
        return None
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": object_meta(passthrough_flavor_name(spec), spec if spec.dedicated else None,
                                namespaced=False),
        "spec": _reserved_flavor_spec(spec) if spec.dedicated else {},
    }


def passthrough_resource_group(spec: TenantSpec) -> dict[str, Any] | None:
    """The ClusterQueue's group for VMs' passthrough GPUs: one flavor, one resource per model,
    each with its `gpu:<model>` grant's quota and limits (None: no whole GPU granted)."""
    models = _passthrough_models(spec)
    if not models:
        return None
    grants = {g.resource: g for g in spec.grants}
    covered = [resource_classes.PASSTHROUGH_RESOURCES[key] for key in models]
    cells = []
    for key, name in zip(models, covered, strict=True):
        grant = grants[resource_classes.gpu_class(key)]
        cells.append(_quota_cell(spec, name, grant.limit, grant))
    return {"coveredResources": covered,
            "flavors": [{"name": passthrough_flavor_name(spec), "resources": cells}]}


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
    borrower of a lower priority. A dedicated tenant that lends takes back what it lent and
    borrows nothing: nothing it runs is ever reclaimed by another."""
    rules: dict[str, Any] = {"withinClusterQueue": "LowerPriority"}
    if spec.in_cohort:
        rules["reclaimWithinCohort"] = "Any"
    if spec.borrows:
        rules["borrowWithinCohort"] = {"policy": "LowerPriority"}
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
    if spec.in_cohort and spec.dedicated:
        # A lender never borrows (only borrowed quota is reclaimed), and lends GPUs only.
        cell["borrowingLimit"] = "0"
        if name in {"cpu", "memory"}:
            cell["lendingLimit"] = "0"
        elif grant is not None and grant.lending_limit is not None:
            cell["lendingLimit"] = str(grant.lending_limit)
    elif spec.in_cohort and name not in {"cpu", "memory"}:
        # No quota line, nothing to borrow; a line without a limit borrows freely.
        if grant is None:
            cell["borrowingLimit"] = "0"
        elif grant.borrowing_limit is not None:
            cell["borrowingLimit"] = str(grant.borrowing_limit)
        if grant is not None and grant.lending_limit is not None:
            cell["lendingLimit"] = str(grant.lending_limit)
    return cell


def _cell_class(name: str, model_key: str) -> str:
    """The resource class of a GPU group's cell: whole GPUs or a MIG profile of the model."""
    if name == resource_classes.GPU_RESOURCE:
        return resource_classes.gpu_class(model_key)
    return f"mig:{model_key}:{name.removeprefix('nvidia.com/mig-')}"


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
                grant = grants.get(_cell_class(name, model_key))
                cells.append(_quota_cell(spec, name, grant.limit if grant else 0, grant))
            flavors.append({"name": flavor_name(spec, model_key), "resources": cells})
        for lent in borrowable_flavors(spec):
            # None of it is the tenant's own: it borrows whole GPUs there (up to its quota
            # line's borrowing limit), never MIG instances (the lender has none).
            grant = grants.get(resource_classes.gpu_class(lent.model_key))
            cells = [
                _quota_cell(spec, name, 0, grant and replace(grant, lending_limit=None)
                            if name == resource_classes.GPU_RESOURCE else None)
                for name in covered
            ]
            flavors.append({"name": flavor_name(_lender(lent), lent.model_key),
                            "resources": cells})
        groups.append({"coveredResources": covered, "flavors": flavors})
    if passthrough := passthrough_resource_group(spec):
        groups.append(passthrough)
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


# --- HAMi shares: their own ClusterQueue and LocalQueue (see above) ----------------------------


def hami_models(spec: TenantSpec) -> list[str]:
    """The GPU models a shared tenant holds HAMi quota for (none for a dedicated tenant)."""
    if spec.dedicated:
        return []
    held = set()
    for grant in spec.grants:
        rc = resource_classes.parse(grant.resource)
        if rc.kind == "hami" and grant.limit > 0:
            held.add(rc.gpu_model.key)
    return [key for key in resource_classes.GPU_MODELS if key in held]


def hami_flavor_name(model_key: str) -> str:
    return f"hami-{model_key}"


def shares_cluster_queue_name(spec: TenantSpec) -> str:
    return f"{spec.cluster_queue}-shares"


def hami_flavor_manifests(spec: TenantSpec) -> list[Manifest]:
    """One flavor per model, the same for every tenant: the model's nodes that HAMi shares."""
    hami_key, hami_value = resource_classes.HAMI_NODE_LABEL
    return [
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": object_meta(hami_flavor_name(key), None, namespaced=False),
            "spec": {"nodeLabels": {
                resource_classes.GPU_PRODUCT_LABEL: resource_classes.GPU_MODELS[key].product_label,
                hami_key: hami_value,
            }},
        }
        for key in hami_models(spec)
    ]


def _hami_cells(spec: TenantSpec, model_key: str) -> list[dict[str, str]]:
    memory = spec.limit_of(resource_classes.hami_key(model_key, "memory-gib"))
    cores = spec.limit_of(resource_classes.hami_key(model_key, "cores"))
    nominal = {
        resource_classes.GPU_RESOURCE: cores // resource_classes.HAMI_MIN_CORES,
        resource_classes.HAMI_MEMORY_RESOURCE: memory * resource_classes.MIB_PER_GIB,
        resource_classes.HAMI_CORES_RESOURCE: cores,
    }
    return [{"name": name, "nominalQuota": str(amount)} for name, amount in nominal.items()]


def shares_cluster_queue_manifest(spec: TenantSpec) -> Manifest | None:
    """The ClusterQueue of the tenant's HAMi shares (None without HAMi quota): in no cohort,
    preempting lower priorities inside it, held while the tenant is suspended."""
    models = hami_models(spec)
    if not models:
        return None
    covered = [resource_classes.GPU_RESOURCE, resource_classes.HAMI_MEMORY_RESOURCE,
               resource_classes.HAMI_CORES_RESOURCE]
    groups = [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": DEFAULT_FLAVOR, "resources": [
                {"name": "cpu", "nominalQuota": str(spec.limit_of("cpu"))},
                {"name": "memory", "nominalQuota": gib(spec.limit_of("memory-gib"))},
            ]}],
        },
        {
            "coveredResources": covered,
            "flavors": [{"name": hami_flavor_name(key), "resources": _hami_cells(spec, key)}
                        for key in models],
        },
    ]
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": object_meta(shares_cluster_queue_name(spec), spec, namespaced=False),
        "spec": {
            "namespaceSelector": {"matchLabels": {TENANT_LABEL: spec.slug}},
            "queueingStrategy": "BestEffortFIFO",
            "stopPolicy": "Hold" if spec.suspended else "None",
            "resourceGroups": groups,
            "preemption": {"withinClusterQueue": "LowerPriority"},
        },
    }


def shares_manifests(spec: TenantSpec) -> list[Manifest]:
    """The HAMi flavors, the shares ClusterQueue and its LocalQueue `shares`, in the order to
    apply them; none without HAMi quota."""
    queue = shares_cluster_queue_manifest(spec)
    if queue is None:
        return []
    local = {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": object_meta(SHARES_LOCAL_QUEUE, spec),
        "spec": {"clusterQueue": queue["metadata"]["name"]},
    }
    return [*hami_flavor_manifests(spec), queue, local]
