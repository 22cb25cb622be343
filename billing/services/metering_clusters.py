"""What each usage record copies when it is metered, so that it outlives what it names:

- its cluster: an allocated record's is its workload's (a workload stays on its cluster), a
  measured record's is its host's node's (as the inventory lists it by hostname, as the GPU
  caps read it). A host the inventory does not know counts under the default cluster;
- who launched its workload and the workload's label (issue 35: cost by person and by
  label). A measured record, per host, has neither."""

from __future__ import annotations

from collections.abc import Sequence

from inventory.models import Node
from inventory.models.cluster import DEFAULT_CLUSTER
from tenants.workloads.models import Workload

# Where a row (in `metering.COPIED_FIELDS` order) names its workload and its host.
WORKLOAD, HOSTNAME = 1, 2
# What `with_copies` appends to each row, in this order.
COPIES = ("cluster", "launched_by_id", "label")


def with_copies(rows: Sequence[tuple]) -> list[tuple]:
    """`rows` (usage records' values in `COPIED_FIELDS` order), each with its cluster's slug,
    its workload's launcher and its workload's label appended (`COPIES`). Two queries at most,
    whatever the number of rows."""
    workloads = {row[WORKLOAD] for row in rows if row[WORKLOAD] is not None}
    hosts = {row[HOSTNAME] for row in rows if row[WORKLOAD] is None and row[HOSTNAME]}
    of_workload = {
        pk: (cluster, launched_by, label)
        for pk, cluster, launched_by, label in Workload.objects.filter(pk__in=workloads)
        .values_list("pk", "cluster_id", "launched_by_id", "label")
    } if workloads else {}
    of_host = dict(
        Node.objects.filter(hostname__in=hosts).order_by("hostname", "pk")
        .values_list("hostname", "cluster_id")
    ) if hosts else {}
    copied = []
    for row in rows:
        if row[WORKLOAD] is not None:
            cluster, launched_by, label = of_workload.get(row[WORKLOAD], (None, None, ""))
        else:
            cluster, launched_by, label = of_host.get(row[HOSTNAME]), None, ""
        copied.append((*row, cluster or DEFAULT_CLUSTER, launched_by, label))
    return copied
