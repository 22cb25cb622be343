"""What a cluster reports of a tenant: its usage per resource class, and what it lends.

Read back by the tenant's reconcile on each cluster (`services.tenant_reconcile`) from the
ResourceQuota's status and Kueue's ClusterQueues."""

from __future__ import annotations

import math

from kubernetes.utils.quantity import parse_quantity

from core.fleet import FleetGateway
from inventory import resource_classes

from .manifests import (
    COUNT_RESOURCES,
    KUEUE,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    RESOURCE_QUOTA,
    TENANT_LABEL,
    TenantSpec,
    borrowable_flavors,
    flavor_name,
    passthrough_flavor_name,
)

GIB = 2**30


def _whole(quantity: str, unit: int = 1) -> int:
    return max(0, math.ceil(parse_quantity(quantity) / unit))


def observed_usage(
    gateway: FleetGateway, spec: TenantSpec
) -> tuple[dict[str, int], dict[str, int]]:
    """What the tenant uses now, per resource class, as the cluster's controllers report it;
    and per GPU and MIG class what of it Kueue counts as borrowed from the cohort."""
    quota = gateway.get(
        api_version="v1", kind="ResourceQuota", name=RESOURCE_QUOTA, namespace=spec.namespace
    )
    # Its own queue and its endpoints' (and its HAMi shares', which no flavor below matches).
    queues = gateway.list(api_version=KUEUE, kind="ClusterQueue",
                          label_selector=f"{TENANT_LABEL}={spec.slug}")
    used = ((quota or {}).get("status") or {}).get("used") or {}
    usage: dict[str, int] = {}
    scalars = {"cpu": ("requests.cpu", 1), "memory-gib": ("requests.memory", GIB)}
    scalars["storage-gib"] = ("requests.storage", GIB)
    for key, (name, unit) in scalars.items():
        if name in used:
            usage[key] = _whole(used[name], unit)
    for kind, name in COUNT_RESOURCES.items():
        if name in used:
            usage[f"count:{kind}"] = _whole(used[name])
    # Per GPU model only Kueue can tell (one flavor per model; a VM's passthrough GPUs, one
    # resource per model); ResourceQuota sums all models.
    granted = [resource_classes.parse(g.resource) for g in spec.grants]
    # (flavor, resource) → (its class, the tenant's nominal quota of it over all its queues).
    by_resource: dict[tuple[str, str], tuple[str, int]] = {}
    for rc, grant in zip(granted, spec.grants, strict=True):
        if rc.kind in {"gpu", "mig"}:
            flavor = flavor_name(spec, rc.gpu_model.key)
            by_resource[(flavor, rc.kubernetes_resource)] = (rc.key, grant.limit)
        if passthrough := resource_classes.PASSTHROUGH_RESOURCES.get(
            rc.gpu_model.key if rc.kind == "gpu" else ""
        ):
            by_resource[(passthrough_flavor_name(spec), passthrough)] = (rc.key, grant.limit)
    for lent in borrowable_flavors(spec):  # all it holds there is borrowed from a lender
        flavor = flavor_name(TenantSpec(slug=lent.lender, isolation="dedicated"), lent.model_key)
        by_resource[(flavor, resource_classes.GPU_RESOURCE)] = (
            resource_classes.gpu_class(lent.model_key), 0)
    reports = [q["status"]["flavorsUsage"] for q in queues
               if (q.get("status") or {}).get("flavorsUsage") is not None]
    borrowed: dict[str, int] = {}
    if reports:
        # Summed over its queues: what they borrow of each other is not borrowed from others.
        totals: dict[tuple[str, str], int] = {}
        for flavor in (flavor for report in reports for flavor in report):
            for cell in flavor.get("resources") or []:
                where = (flavor.get("name"), cell.get("name"))
                if where in by_resource:
                    totals[where] = totals.get(where, 0) + _whole(cell.get("total") or "0")
        for where, total in totals.items():
            key, nominal = by_resource[where]
            usage[key] = usage.get(key, 0) + total
            borrowed[key] = borrowed.get(key, 0) + max(0, total - nominal)
    else:
        # With HAMi shares, `requests.nvidia.com/gpu` also counts their vGPUs.
        has_hami = any(rc.kind == "hami" for rc in granted)
        for rc in granted:
            name = f"requests.{rc.kubernetes_resource}"
            same = [o for o in granted if o.kubernetes_resource == rc.kubernetes_resource]
            if rc.kubernetes_resource == resource_classes.GPU_RESOURCE and has_hami:
                continue
            if rc.kind in {"gpu", "mig"} and len(same) == 1 and name in used:
                usage[rc.key] = _whole(used[name])
    # HAMi shares: the ResourceQuota's namespace-wide figure, per model only if one is granted.
    for rc in granted:
        name = f"requests.{rc.kubernetes_resource}"
        same = [o for o in granted if o.kubernetes_resource == rc.kubernetes_resource]
        if rc.kind == "hami" and len(same) == 1 and name in used:
            unit = resource_classes.MIB_PER_GIB if rc.hami_counter == "memory-gib" else 1
            usage[rc.key] = _whole(used[name], unit)
    return usage, borrowed


def observed_lent(gateway: FleetGateway, spec: TenantSpec) -> dict[str, int]:
    """A dedicated tenant's GPU classes: what the other tenants' ClusterQueues report in use
    of its flavors (Kueue reports borrowing in the borrower's status, not the lender's); 0 each
    when it does not lend. One list of the portal's ClusterQueues, for lenders only."""
    if not spec.dedicated:
        return {}
    flavors = {
        flavor_name(spec, resource_classes.parse(g.resource).gpu_model.key): g.resource
        for g in spec.grants
        if g.resource.startswith("gpu:")
    }
    lent = dict.fromkeys(flavors.values(), 0)
    if not spec.lends:
        return lent
    queues = gateway.list(api_version=KUEUE, kind="ClusterQueue",
                          label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}")
    for queue in queues:
        if ((queue["metadata"].get("labels") or {}).get(TENANT_LABEL)) == spec.slug:
            continue  # its own queues (its endpoints' too) lend nothing to themselves
        for flavor in ((queue.get("status") or {}).get("flavorsUsage")) or []:
            key = flavors.get(flavor.get("name"))
            if key is None:
                continue
            for cell in flavor.get("resources") or []:
                if cell.get("name") == resource_classes.GPU_RESOURCE:
                    lent[key] += _whole(cell.get("total") or "0")
    return lent
