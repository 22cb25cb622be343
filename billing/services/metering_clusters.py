"""Which cluster each usage record is of, copied when it is metered: an allocated record's is
its workload's (a workload stays on its cluster), a measured record's is its host's node's (as
the inventory lists it by hostname, as the GPU caps read it). A host the inventory does not
know counts under the default cluster."""

from __future__ import annotations

from collections.abc import Sequence

from inventory.models import Node
from inventory.models.cluster import DEFAULT_CLUSTER
from tenants.workloads.models import Workload

# Where a row (in `metering.COPIED_FIELDS` order) names its workload and its host.
WORKLOAD, HOSTNAME = 1, 2


def with_clusters(rows: Sequence[tuple]) -> list[tuple]:
    """`rows` (usage records' values in `COPIED_FIELDS` order), each with its cluster's slug
    appended. Two queries at most, whatever the number of rows."""
    workloads = {row[WORKLOAD] for row in rows if row[WORKLOAD] is not None}
    hosts = {row[HOSTNAME] for row in rows if row[WORKLOAD] is None and row[HOSTNAME]}
    of_workload = dict(
        Workload.objects.filter(pk__in=workloads).values_list("pk", "cluster_id")
    ) if workloads else {}
    of_host = dict(
        Node.objects.filter(hostname__in=hosts).order_by("hostname", "pk")
        .values_list("hostname", "cluster_id")
    ) if hosts else {}
    return [
        (*row, (of_workload.get(row[WORKLOAD]) if row[WORKLOAD] is not None
                else of_host.get(row[HOSTNAME])) or DEFAULT_CLUSTER)
        for row in rows
    ]
