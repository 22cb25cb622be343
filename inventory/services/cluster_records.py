"""Clusters as platform admins edit them (Django admin): each save one transaction with an audit
event naming what changed. The state (active, draining, retired) is an admin decision of its
own: `cluster_set_state` records it apart, so the audit trail says who drained or retired a
cluster and when.

The slug never changes once a cluster exists: nodes, workloads, task queues and objects'
labels name the cluster by it. Reachability is the portal's observation and is never saved
from here.
"""

from typing import Any

from django.db import transaction

from core.audit import audit
from core.errors import RuleViolation
from core.queueing import workers_serve_clusters

from ..models import Cluster
from ..models.cluster import ClusterState

# What an admin's form may change; the rest is the portal's own observation.
EDITABLE = ("name", "site", "api_server", "prometheus_url", "credentials", "kubeconfig_path",
            "kube_context", "secret_name")


@transaction.atomic
def cluster_set_state(*, cluster: Cluster, state: str, actor: Any | None) -> Cluster:
    """Move `cluster` to `state` (draining: no new placements, its work stays; retired: no
    work at all; active: placements again). A no-op when it is there already."""
    if state not in ClusterState.values:
        raise RuleViolation(f"There is no cluster state “{state[:40]}”.")
    locked = Cluster.objects.select_for_update().get(pk=cluster.pk)
    if locked.state != state:
        before = locked.state
        Cluster.objects.filter(pk=locked.pk).update(state=state)
        audit(actor=actor, action="cluster.state", obj=locked,
              changes={"state": [before, state]})
    cluster.state = state
    return cluster


@transaction.atomic
def cluster_save(*, actor: Any | None, cluster: Cluster, changed: list[str]) -> Cluster:
    """Save a cluster filled in by an admin form (already validated): a new one is created as
    given; an existing one has its editable fields saved and its state moved through
    `cluster_set_state`."""
    if cluster.pk is None:
        cluster.full_clean()
        cluster.save()
        audit(actor=actor, action="cluster.create", obj=cluster,
              changes={"slug": cluster.slug, "name": cluster.name, "state": cluster.state})
        transaction.on_commit(workers_serve_clusters)  # its queue is served from now on
        return cluster
    before = Cluster.objects.select_for_update().get(pk=cluster.pk)
    if before.slug != cluster.slug:
        raise RuleViolation("A cluster's slug never changes: its nodes, workloads and queues "
                            "are named by it.")
    cluster.full_clean()
    fields = [name for name in EDITABLE if name in changed or f"{name}_id" in changed]
    if fields:
        Cluster.objects.filter(pk=cluster.pk).update(
            **{name: getattr(cluster, name) for name in fields})
        audit(actor=actor, action="cluster.update", obj=cluster, changes={
            name: [str(getattr(before, name)), str(getattr(cluster, name))] for name in fields
        })
    if cluster.state != before.state:
        cluster_set_state(cluster=cluster, state=cluster.state, actor=actor)
    return cluster
