"""What "in use" means on every page: what the tenants' workloads hold of each resource class
(every workload not deleted, its demand as launched or last resized). The tenant dashboard, the
quota page, a quota request's preview, the admin review and the fleet's capacity all read it
from here; where the cluster's own figure (a ResourceQuota's status, the pods a cluster sync
saw) differs, the pages show it beside this one, each labelled.

Reads the workloads' table only (models), so the quota's capacity module, beneath the workload
selectors, may read it too.
"""

from __future__ import annotations

import json
from collections import defaultdict

from django.db import connection

from .models import HOLDING, Workload

IN_USE_WORDS = "held by workloads"


def _summed(rows) -> dict[str, int]:
    sums: dict[str, int] = {}
    for demand, count in rows:
        if isinstance(demand, str):  # SQLite's JSON is text
            demand = json.loads(demand)
        if not isinstance(demand, dict):
            continue
        for resource, amount in demand.items():
            sums[resource] = sums.get(resource, 0) + int(amount) * count
    return sums


def demand_in_use(*, tenant_ids: list[int]) -> dict[int, dict[str, int]]:
    """Per tenant, what its workloads hold of each resource class (every one not deleted).
    One query whatever the number of tenants.

    The database groups the workloads by their demand document and counts each: workloads of
    a tenant are launched from a few shapes, so a tenant running 300 reads a row per shape
    (its 300 documents are neither sent nor expanded key by key), and Python multiplies."""
    if not tenant_ids:
        return {}
    holding = sorted(HOLDING)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tenant_id, demand, COUNT(*) "  # noqa: S608 - placeholders only
            f'FROM "{Workload._meta.db_table}" '
            f"WHERE status IN ({', '.join(['%s'] * len(holding))}) "
            f"AND tenant_id IN ({', '.join(['%s'] * len(tenant_ids))}) "
            "GROUP BY tenant_id, demand",
            [*holding, *tenant_ids],
        )
        rows = cursor.fetchall()
    by_tenant: dict[int, list] = defaultdict(list)
    for tenant_id, demand, count in rows:
        by_tenant[tenant_id].append((demand, count))
    return {tenant_id: _summed(shapes) for tenant_id, shapes in by_tenant.items()}


def demand_in_use_by_class() -> dict[str, int]:
    """The whole fleet's: what every tenant's workloads hold of each resource class (GPUs,
    partitions, vCPUs, memory...). One query, a row per distinct demand document."""
    holding = sorted(HOLDING)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT demand, COUNT(*) "  # noqa: S608 - placeholders only
            f'FROM "{Workload._meta.db_table}" '
            f"WHERE status IN ({', '.join(['%s'] * len(holding))}) "
            "GROUP BY demand",
            holding,
        )
        return _summed(cursor.fetchall())
