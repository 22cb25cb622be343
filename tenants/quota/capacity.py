"""Fleet capacity against what tenants were granted: the numbers quota approval decides on.

Composes the inventory's counts (`inventory.selectors.capacity`) with the quotas granted here;
tenants sit above inventory, so this module may read both.

- `capacity_by_resource_class()` — one row per resource class the fleet measures (GPU, MIG and
  HAMi classes, vCPU, memory) or that some tenant was granted: installed, healthy, reserved,
  granted, in use (held by workloads) and what the cluster reports in use.
- `fleet_capacity_by_resource_class()` — the same rows keyed by resource class, for every key
  of the vocabulary; classes the inventory does not measure (storage, workload counts) have
  `installed`/`healthy` None, so `free()` and `ratio()` say "not measured" (None).
- `pool_capacity_by_resource_class()` / `tenant_capacity_by_resource_class()` — the same map
  for the pool a tenant schedules on, which is what quota approval decides on. A dedicated
  tenant's pool is the nodes reserved for it (granted: its own quota); a shared tenant's is the
  shared pool, the nodes reserved for nobody (granted: every active shared tenant's quota).
  Nodes reserved for one tenant are tainted against everyone else, so they are in no other
  tenant's capacity, and the fleet's total would promise a dedicated tenant GPUs it can never
  be scheduled on.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Sum

from inventory import resource_classes
from inventory.selectors.capacity import (
    SHARED_POOL,
    InventoryCapacity,
    capacity_by_pool,
    gpu_capacity_by_class,
    node_capacity_by_class,
)

from ..access.models import Tenant
from ..workloads.in_use import demand_in_use_by_class
from .models import Quota


@dataclass(frozen=True)
class ResourceCapacity:
    """What the fleet has of one resource class, and how much of it tenants were granted."""

    resource: str
    label: str
    installed: int | None
    healthy: int | None
    reserved: int | None
    granted: int
    # What tenants' workloads hold (`tenants.workloads.in_use`, the portal's one "in use");
    # None where not counted (a pool's rows).
    in_use: int | None
    # The pool the counts are of: a dedicated tenant's slug, SHARED_POOL, or None (the fleet).
    pool: str | None = None
    # What the cluster last reported in use (pods a cluster sync saw ask for GPUs, MIG
    # instances, HAMi shares); None where the cluster's figure is not measured (vCPUs, memory).
    cluster_in_use: int | None = None

    @property
    def cluster_differs(self) -> bool:
        """The cluster reports another figure than the workloads hold: both are shown."""
        return self.cluster_in_use is not None and self.cluster_in_use != self.in_use

    @property
    def pool_label(self) -> str:
        if self.pool is None:
            return "the whole fleet"
        if self.pool == SHARED_POOL:
            return "the shared pool (nodes reserved for nobody)"
        return f"nodes reserved for {self.pool}"

    @property
    def measured(self) -> bool:
        return self.healthy is not None

    def free(self, *, extra: int = 0) -> int | None:
        """Healthy units left after every grant (and `extra` more); negative: oversubscribed.
        None when the inventory does not measure this class."""
        if self.healthy is None:
            return None
        return self.healthy - self.granted - extra

    def ratio(self, *, extra: int = 0) -> Decimal | None:
        """Granted (plus `extra`) per healthy unit, e.g. 1.25 = 25 % oversubscribed."""
        if not self.healthy:
            return None
        return (Decimal(self.granted + extra) / Decimal(self.healthy)).quantize(Decimal("0.01"))

    def unschedulable(self, *, quota: int) -> int | None:
        """How much of one tenant's `quota` no healthy unit of this pool could run (0: all of
        it fits); None when the inventory does not measure this class."""
        if self.healthy is None:
            return None
        return max(0, quota - self.healthy)


def _granted_by_class() -> dict[str, int]:
    return dict(
        Quota.objects.filter(tenant__status=Tenant.Status.ACTIVE)
        .values_list("resource")
        .annotate(total=Sum("limit"))
        .order_by()
    )


def _label(key: str) -> str:
    try:
        return resource_classes.parse(key).label
    except resource_classes.UnknownResourceClass:
        return key


def _rows(
    keys: list[str],
    granted: dict[str, int],
    measured: dict[str, InventoryCapacity] | None = None,
    pool: str | None = None,
) -> dict[str, ResourceCapacity]:
    if measured is None:
        measured = gpu_capacity_by_class() | node_capacity_by_class()
    rows = {}
    for key in keys:
        counts = measured.get(key)
        if counts is None and _measured_class(key):
            counts = InventoryCapacity()  # the inventory counts these: there are none
        rows[key] = ResourceCapacity(
            resource=key,
            label=_label(key),
            installed=counts.installed if counts else None,
            healthy=counts.healthy if counts else None,
            reserved=counts.reserved if counts else None,
            granted=granted.get(key) or 0,
            in_use=None,
            pool=pool,
            cluster_in_use=_cluster_figure(key, counts),
        )
    return rows


def _cluster_figure(key: str, counts: InventoryCapacity | None) -> int | None:
    """What the cluster reported in use of `key`: GPU classes only (the cluster sync does not
    measure vCPUs and memory in use)."""
    if counts is None or not key.startswith(("gpu:", "mig:", "hami:")):
        return None
    return counts.in_use


def _measured_class(key: str) -> bool:
    return key.startswith(("gpu:", "mig:", "hami:")) or key in ("cpu", "memory-gib")


def _ordered(keys: set[str]) -> list[str]:
    order = resource_classes.key_order()
    return sorted(keys, key=lambda k: (order.get(k, len(order)), k))


def capacity_by_resource_class() -> list[ResourceCapacity]:
    """One row per GPU resource class (`gpu:<model>`, `mig:<model>:<profile>`,
    `hami:<model>:memory-gib|cores`) and per node resource (`cpu`, `memory-gib`) that the fleet
    has or some tenant was granted, in the vocabulary's order. A fixed number of queries
    (five), whatever the fleet's size.

    - installed: whole GPUs (or MIG instances, HAMi GiB and percent, vCPUs, GiB) on nodes that
      are not retired; a GPU partitioned by MIG counts under its profiles only, a GPU HAMi
      shares under its HAMi classes only, so no unit is counted twice;
    - healthy: of those, the ones whose GPU reports healthy on a node that is available;
    - reserved: of those installed, the ones on nodes reserved for a dedicated tenant;
    - granted: the sum of active tenants' quota limits for the class;
    - in_use: what the tenants' workloads hold of the class (`demand_in_use_by_class`, the
      same figure as every tenant page's), vCPUs and memory included;
    - cluster_in_use: GPUs (MIG instances, HAMi shares) requested by pods running on the
      nodes, as the last cluster sync saw them (None for vCPUs and memory: not measured).
    """
    granted = _granted_by_class()
    measured = gpu_capacity_by_class() | node_capacity_by_class()
    held = demand_in_use_by_class()
    keys = set(measured) | {k for k in granted if _measured_class(k)}
    keys |= {k for k, amount in held.items() if amount and _measured_class(k)}
    rows = []
    for key in _ordered(keys):
        counts = measured.get(key)
        rows.append(
            ResourceCapacity(
                resource=key,
                label=_label(key),
                installed=counts.installed if counts else 0,
                healthy=counts.healthy if counts else 0,
                reserved=counts.reserved if counts else 0,
                granted=granted.get(key) or 0,
                in_use=held.get(key, 0),
                cluster_in_use=_cluster_figure(key, counts or InventoryCapacity()),
            )
        )
    return rows


def fleet_capacity_by_resource_class() -> dict[str, ResourceCapacity]:
    """Every resource class of the vocabulary (and any granted one) → its capacity row."""
    granted = _granted_by_class()
    return _rows(_ordered(set(resource_classes.all_keys()) | set(granted)), granted)


def pool_of(tenant: Tenant) -> str:
    """The pool `tenant` schedules on: its reserved nodes if dedicated, else the shared pool."""
    return tenant.slug if tenant.isolation == Tenant.Isolation.DEDICATED else SHARED_POOL


def _granted_by_pool() -> dict[str, dict[str, int]]:
    rows = (
        Quota.objects.filter(tenant__status=Tenant.Status.ACTIVE)
        .values_list("tenant__isolation", "tenant__slug", "resource")
        .annotate(total=Sum("limit"))
        .order_by()
    )
    granted: dict[str, dict[str, int]] = {}
    for isolation, slug, resource, total in rows:
        pool = slug if isolation == Tenant.Isolation.DEDICATED else SHARED_POOL
        by_class = granted.setdefault(pool, {})
        by_class[resource] = by_class.get(resource, 0) + (total or 0)
    return granted


def pool_capacity_by_resource_class(
    *, pools: Iterable[str]
) -> dict[str, dict[str, ResourceCapacity]]:
    """For each pool (see `pool_of`), every resource class → its capacity row in that pool.

    Four queries whatever the number of pools, nodes or tenants.
    """
    measured = capacity_by_pool()
    granted = _granted_by_pool()
    keys = set(resource_classes.all_keys())
    for by_class in granted.values():
        keys |= set(by_class)
    ordered = _ordered(keys)
    return {
        pool: _rows(ordered, granted.get(pool, {}), dict(measured.get(pool, {})), pool)
        for pool in set(pools)
    }


def tenant_capacity_by_resource_class(*, tenant: Tenant) -> dict[str, ResourceCapacity]:
    """Every resource class → what `tenant` can be scheduled on, and what is granted there."""
    pool = pool_of(tenant)
    return pool_capacity_by_resource_class(pools=[pool])[pool]
