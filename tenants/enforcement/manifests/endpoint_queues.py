"""An inference endpoint's minimum replicas, out of reclaim's reach: a ClusterQueue per endpoint.

Kueue admits each replica of a predictor on its own (its `deployment` integration) and, when a
lender takes back what a tenant borrowed, preempts the borrowing ClusterQueue's workloads, the
lowest priority and the most recently admitted first: it knows no Deployment's minimum. It
never reclaims a ClusterQueue below its nominal quota, though. So each endpoint with a minimum
(`min_replicas` > 0) on whole GPUs or MIG gets its own ClusterQueue, `<tenant queue>-ep-<name>`
(hashed to 63 characters when longer), whose nominal quota is what its minimum holds (replicas x
GPUs or MIG instances, vCPUs and memory per replica), and its LocalQueue `ep-<name>` in the
tenant's namespace, which its InferenceService names. The tenant's own ClusterQueue keeps the
rest of the grant (each endpoint takes its share in turn, never more than is left), so the
tenant's total stays its grant.

Both are in a Cohort of the tenant's own, `<tenant queue>-cohort`, whose parent is the tenant's
shared cohort when it is in one: an endpoint's replicas above its minimum borrow first what the
tenant's other queues leave idle, then through the parent what the cohort lends. The tenant's
borrowing and lending limits move from its ClusterQueue's cells to the Cohort's (Kueue applies a
Cohort's limits to everything its members borrow from, or lend to, the parent), at nominal 0,
so a dedicated lender still never borrows and lends only its GPUs. Inside the tenant's Cohort the
queues borrow from each other freely, and each takes back its own (`reclaimWithinCohort: Any`):
an endpoint's replicas above its minimum are borrowed, and the tenant's other work reclaims them
when it needs its own quota; its minimum no one reclaims.

HAMi shares stay in the `shares` queue: it is in no cohort, nothing there is lent or borrowed,
so nothing there is ever reclaimed. An endpoint of minimum 0 stays in the queue `default`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from inventory import resource_classes

from ...workloads.kinds.naming import bounded_label
from .kueue import borrowable_flavors, flavor_name
from .spec import (
    DEFAULT_FLAVOR,
    KUEUE,
    EndpointQueue,
    Manifest,
    TenantSpec,
    gib,
    object_meta,
)

INFERENCE = "inference"  # the workload kind that gets them
NAME_LIMIT = 63  # a queue's name is a label value (kueue.x-k8s.io/queue-name)


def endpoint_queue(name: str, spec: Mapping[str, Any], *, dedicated: bool) -> EndpointQueue | None:
    """The queue an inference endpoint's stored spec asks for (None: it stays in its tenant's
    queues: no minimum, a HAMi share, or MIG built for a tenant that is dedicated now)."""
    try:
        rc = resource_classes.parse(str(spec.get("gpu") or ""))
        minimum = int(spec.get("min_replicas") or 0)
    except (ValueError, TypeError, KeyError):
        return None
    if rc.kind not in {"gpu", "mig"} or minimum <= 0 or (rc.kind == "mig" and dedicated):
        return None
    return EndpointQueue(
        name=name,
        resource=rc.key,
        per_replica=int(spec.get("gpus_per_replica") or 1),
        min_replicas=minimum,
        cpu=int(spec.get("cpu") or 0),
        memory_gib=int(spec.get("memory_gib") or 0),
    )


def local_queue_name(endpoint: str) -> str:
    return bounded_label(f"ep-{endpoint}", NAME_LIMIT)


def cluster_queue_name(spec: TenantSpec, endpoint: str) -> str:
    return bounded_label(f"{spec.cluster_queue}-ep-{endpoint}", NAME_LIMIT, prefix="q")


def tenant_cohort_name(spec: TenantSpec) -> str:
    return f"{spec.cluster_queue}-cohort"


def _cell_of(spec: TenantSpec, resource: str) -> tuple[str, str]:
    """The (flavor, Kubernetes resource) of a GPU or MIG class in the tenant's queues."""
    rc = resource_classes.parse(resource)
    return flavor_name(spec, rc.gpu_model.key), rc.kubernetes_resource


def shares(spec: TenantSpec) -> list[dict[str, int]]:
    """What each endpoint's minimum takes of the grant (its GPU class, `cpu`, `memory-gib`),
    in turn, never more than is left: the tenant's own queue keeps the rest."""
    left: dict[str, int] = {}
    taken = []
    for endpoint in spec.endpoint_queues:
        need = {
            endpoint.resource: endpoint.per_replica,
            "cpu": endpoint.cpu,
            "memory-gib": endpoint.memory_gib,
        }
        share = {}
        for key, per_replica in need.items():
            left.setdefault(key, spec.limit_of(key))
            share[key] = min(left[key], per_replica * endpoint.min_replicas)
            left[key] -= share[key]
        taken.append(share)
    return taken


def _reduced(spec: TenantSpec, groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tenant queue's groups less what its endpoints hold, without limits (the tenant's
    Cohort carries them)."""
    minus: dict[tuple[str, str], int] = {}
    for endpoint, share in zip(spec.endpoint_queues, shares(spec), strict=True):
        cell = _cell_of(spec, endpoint.resource)
        minus[cell] = minus.get(cell, 0) + share[endpoint.resource]
        for key, name in (("cpu", "cpu"), ("memory-gib", "memory")):
            minus[(DEFAULT_FLAVOR, name)] = minus.get((DEFAULT_FLAVOR, name), 0) + share[key]
    groups = copy.deepcopy(groups)
    for group in groups:
        for found in group["flavors"]:
            for cell in found["resources"]:
                cell.pop("borrowingLimit", None)
                cell.pop("lendingLimit", None)
                less = minus.get((found["name"], cell["name"]), 0)
                if cell["name"] == "memory" and found["name"] == DEFAULT_FLAVOR:
                    cell["nominalQuota"] = gib(spec.limit_of("memory-gib") - less)
                elif less:
                    cell["nominalQuota"] = str(int(cell["nominalQuota"]) - less)
    return groups


def _limits_only(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tenant queue's groups that carry limits, as its Cohort's: nominal 0, limits kept."""
    groups = copy.deepcopy(
        [
            group
            for group in groups
            if any(
                {"borrowingLimit", "lendingLimit"} & set(cell)
                for found in group["flavors"]
                for cell in found["resources"]
            )
        ]
    )
    for group in groups:
        for found in group["flavors"]:
            for cell in found["resources"]:
                cell["nominalQuota"] = "0"
    return groups


def tenant_cohort_manifest(spec: TenantSpec, groups: list[dict[str, Any]]) -> Manifest:
    cohort_spec: dict[str, Any] = {}
    if spec.in_cohort:  # a Cohort has limits only under a parent (Kueue's webhook)
        cohort_spec["parentName"] = spec.cohort
        if limited := _limits_only(groups):
            cohort_spec["resourceGroups"] = limited
    return {
        "apiVersion": KUEUE,
        "kind": "Cohort",
        "metadata": object_meta(tenant_cohort_name(spec), spec, namespaced=False),
        "spec": cohort_spec,
    }


def _endpoint_cluster_queue(
    spec: TenantSpec, queue: Manifest, endpoint: EndpointQueue, share: dict[str, int]
) -> Manifest:
    rc = resource_classes.parse(endpoint.resource)
    own, resource = _cell_of(spec, endpoint.resource)
    flavors = [
        {
            "name": own,
            "resources": [{"name": resource, "nominalQuota": str(share[endpoint.resource])}],
        }
    ]
    if rc.kind == "gpu":  # it may borrow a lender's reserved GPUs as the tenant's queue does
        flavors += [
            {
                "name": flavor_name(
                    TenantSpec(slug=lent.lender, isolation="dedicated"), lent.model_key
                ),
                "resources": [{"name": resource, "nominalQuota": "0"}],
            }
            for lent in borrowable_flavors(spec)
            if lent.model_key == rc.gpu_model.key
        ]
    groups = [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": DEFAULT_FLAVOR,
                    "resources": [
                        {"name": "cpu", "nominalQuota": str(share["cpu"])},
                        {"name": "memory", "nominalQuota": gib(share["memory-gib"])},
                    ],
                }
            ],
        },
        {"coveredResources": [resource], "flavors": flavors},
    ]
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": object_meta(cluster_queue_name(spec, endpoint.name), spec, namespaced=False),
        "spec": {**copy.deepcopy(queue["spec"]), "resourceGroups": groups},
    }


def grouped(spec: TenantSpec, queue: Manifest) -> list[Manifest]:
    """With endpoint queues: the tenant's Cohort, its ClusterQueue (`queue`, as built without
    them) reduced and moved into the Cohort, and each endpoint's ClusterQueue and LocalQueue,
    in the order to apply them. Without: just `queue`."""
    if not spec.endpoint_queues:
        return [queue]
    groups = queue["spec"]["resourceGroups"]
    preemption = {**queue["spec"]["preemption"], "reclaimWithinCohort": "Any"}
    own = copy.deepcopy(queue)
    own["spec"] |= {
        "cohortName": tenant_cohort_name(spec),
        "preemption": preemption,
        "resourceGroups": _reduced(spec, groups),
    }
    manifests = [tenant_cohort_manifest(spec, groups), own]
    for endpoint, share in zip(spec.endpoint_queues, shares(spec), strict=True):
        cluster_queue = _endpoint_cluster_queue(spec, own, endpoint, share)
        manifests += [
            cluster_queue,
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": object_meta(local_queue_name(endpoint.name), spec),
                "spec": {"clusterQueue": cluster_queue["metadata"]["name"]},
            },
        ]
    return manifests
