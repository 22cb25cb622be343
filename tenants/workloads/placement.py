"""Placement: the clusters a launch may go to, and the one the portal picks.

An option is a cluster that takes new work (`Cluster.objects.placeable()`: active and answering)
where the tenant was granted enough of every class the launch demands (that cluster's grant plus
the fleet-wide one, `grants_by_cluster`) and, for GPU classes (whole GPUs, MIG instances, HAMi
shares), where the tenant's pool holds that class: its reserved nodes if it is dedicated (the only
nodes its pods tolerate), the shared pool if it is shared. Other demands (vCPUs, memory, storage,
counts) need quota only.

Free is what the pool's healthy units leave on that cluster: healthy less what is in use there,
the more of what the workloads placed there hold and what the last cluster sync saw pods ask for
(pods run outside the portal too). A cluster where the launch does not fit now is still an
option: the workload waits there (Pending, or Queued by Kueue) until room frees up, as on one
cluster.

The portal's choice, best first: the tenant's own reserved nodes where the launch fits, then any
cluster where it fits, then the most free room (how many times the launch would fit, its
scarcest class deciding). A fixed number of queries (five), whatever the number of clusters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from django.core.exceptions import ValidationError

from inventory import resource_classes
from inventory.models import Cluster
from inventory.selectors.capacity import InventoryCapacity, gpu_capacity_by_cluster

from ..access.models import Tenant
from ..quota.capacity import pool_of
from ..quota.limits import grants_by_cluster, overruns
from .in_use import demand_held_by_cluster, demand_in_use_by_cluster
from .models import Workload

GPU_KINDS = ("gpu:", "mig:", "hami:")


@dataclass(frozen=True)
class Room:
    """One GPU class of a launch on one cluster: asked, and what the tenant's pool has free."""

    resource: str
    label: str
    asked: int
    healthy: int
    free: int

    @property
    def fits(self) -> bool:
        return self.free >= self.asked


@dataclass(frozen=True)
class PlacementOption:
    """A cluster a launch may go to, with the room its GPU classes have there."""

    cluster: str
    name: str
    site: str
    dedicated: bool  # the room is on nodes reserved for the tenant
    rooms: tuple[Room, ...] = ()

    @property
    def fits(self) -> bool:
        return all(room.fits for room in self.rooms)

    @property
    def times(self) -> Fraction | None:
        """How many times the launch fits in what is free (its scarcest class); None: it asks
        no GPU."""
        if not self.rooms:
            return None
        return min(Fraction(max(room.free, 0), room.asked) for room in self.rooms)

    @property
    def room_label(self) -> str:
        """What the option offers, as the launch form's select says it."""
        if not self.rooms:
            return "no GPUs asked"
        where = "free on your reserved nodes" if self.dedicated else "free"
        text = "; ".join(f"{max(r.free, 0):,} of {r.healthy:,} {r.label} {where}"
                         for r in self.rooms)
        return text if self.fits else f"{text}: full now, it would wait for room"


@dataclass(frozen=True)
class Placement:
    """Where a launch may go (`options`, the portal's choice first) and why the other clusters
    in service may not (`refused`: (slug, name, reason))."""

    options: tuple[PlacementOption, ...]
    refused: tuple[tuple[str, str, str], ...]
    what: str  # the launch's GPU demand in words ("4 NVIDIA H100 GPUs"), or "this launch"

    @property
    def choice(self) -> PlacementOption | None:
        return self.options[0] if self.options else None

    def get(self, cluster: str) -> PlacementOption | None:
        return next((o for o in self.options if o.cluster == cluster), None)

    def error(self) -> ValidationError:
        reasons = "; ".join(f"{name}: {why}" for _, name, why in self.refused)
        return ValidationError({"cluster": [f"No cluster has room for {self.what} now: "
                                            f"{reasons or 'no cluster takes new work'}."]})


def _label(resource: str) -> str:
    try:
        return resource_classes.parse(resource).label
    except resource_classes.UnknownResourceClass:
        return resource


def _gpu_demand(demand: Mapping[str, int]) -> dict[str, int]:
    return {r: int(a) for r, a in demand.items() if r.startswith(GPU_KINDS) and int(a) > 0}


def _held_in_pool(tenant: Tenant) -> dict[str, dict[str, int]]:
    """Per cluster, what the workloads sharing the tenant's pool hold there: its own if it is
    dedicated (nobody else runs on its reserved nodes), every shared tenant's if shared."""
    if tenant.isolation == Tenant.Isolation.DEDICATED:
        workloads = Workload.objects.filter(tenant=tenant)
    else:
        workloads = Workload.objects.filter(tenant__isolation=Tenant.Isolation.SHARED)
    return demand_held_by_cluster(workloads=workloads)


def _why_not(cluster: Cluster) -> str:
    if not cluster.reachable:
        return "unreachable"
    return f"{cluster.get_state_display().lower()}, it takes no new work"


def placement_options(*, tenant: Tenant, demand: Mapping[str, int]) -> Placement:
    """Where `tenant` may launch a workload demanding `demand` (resource class → units, as
    `workload_validate` gives it), the portal's choice first. Six queries."""
    clusters = list(Cluster.objects.in_service().select_related("site").order_by("name", "slug"))
    grants = grants_by_cluster(tenant)
    own = demand_in_use_by_cluster(tenant_id=tenant.pk)
    gpus = _gpu_demand(demand)
    capacity = gpu_capacity_by_cluster() if gpus else {}
    held = _held_in_pool(tenant) if gpus else {}
    pool = pool_of(tenant)
    dedicated = tenant.isolation == Tenant.Isolation.DEDICATED
    options, refused = [], []
    for cluster in clusters:
        if not (cluster.state == Cluster.State.ACTIVE and cluster.reachable):
            refused.append((cluster.slug, cluster.name, _why_not(cluster)))
            continue
        # What its quota leaves there (its grant on the cluster, then the fleet-wide one).
        short = [o.resource for o in overruns(grants, own, cluster=cluster.slug,
                                              demand={r: int(a) for r, a in demand.items()})]
        if short:
            refused.append((cluster.slug, cluster.name, "not enough quota for " + ", ".join(
                _label(r) for r in short)))
            continue
        counts = capacity.get(cluster.slug, {}).get(pool, {})
        rooms, missing = [], []
        for resource, asked in sorted(gpus.items()):
            row = counts.get(resource) or InventoryCapacity()
            if not row.installed:
                missing.append(_label(resource))
                continue
            in_use = max(row.in_use, held.get(cluster.slug, {}).get(resource, 0))
            rooms.append(Room(resource, _label(resource), asked, row.healthy,
                              row.healthy - in_use))
        if missing:
            where = "your reserved nodes" if dedicated else "the shared pool"
            refused.append((cluster.slug, cluster.name, f"no {', '.join(missing)} on {where}"))
            continue
        options.append(PlacementOption(
            cluster=cluster.slug, name=cluster.name,
            site=cluster.site.name if cluster.site else "", dedicated=dedicated and bool(rooms),
            rooms=tuple(rooms),
        ))
    options.sort(key=lambda o: (not (o.dedicated and o.fits), not o.fits, -(o.times or 0)))
    what = ", ".join(f"{amount:,} {_label(r)}" for r, amount in sorted(gpus.items()))
    return Placement(options=tuple(options), refused=tuple(refused),
                     what=what or "this launch")


def placement_check(
    *, tenant: Tenant, demand: Mapping[str, int], cluster: str | None = None
) -> str:
    """The cluster a launch goes to: `cluster` if it is one of the options, the portal's choice
    for None; else ValidationError({"cluster": …}). Call under the tenant's lock (admission's)."""
    placement = placement_options(tenant=tenant, demand=demand)
    if cluster:
        if placement.get(cluster) is not None:
            return cluster
        reason = next((why for slug, _, why in placement.refused if slug == cluster), "")
        offered = ", ".join(o.cluster for o in placement.options) or "none"
        raise ValidationError({"cluster": [
            f"“{cluster[:60]}” is not a cluster this launch may go to"
            f"{f' ({reason})' if reason else ''}; pick one of: {offered}."]})
    if placement.choice is None:
        raise placement.error()
    return placement.choice.cluster
