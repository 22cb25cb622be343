"""How the fleet gateway reaches each cluster: `core.fleet` asks here (FLEET_CONNECTIONS)."""

from __future__ import annotations

from core.fleet import Connection, PermanentFleetError, Reachability

from ..models import Cluster, ClusterState


def cluster_connection(cluster: str) -> Connection:
    """The connection to the cluster named `cluster`, with its reachability (one indexed read);
    PermanentFleetError when there is no such cluster or it is retired (it holds no work any
    more)."""
    found = (
        Cluster.objects.filter(slug=cluster)
        .values("state", "credentials", "kubeconfig_path", "kube_context", "secret_name",
                *REACHABILITY_FIELDS)
        .first()
    )
    if found is None:
        raise PermanentFleetError(f"there is no cluster {cluster!r}", status=404)
    if found["state"] == ClusterState.RETIRED:
        raise PermanentFleetError(f"cluster {cluster!r} is retired", status=410)
    credentials = Cluster.Credentials(found["credentials"])
    own = credentials == Cluster.Credentials.ENVIRONMENT
    from_file = credentials == Cluster.Credentials.KUBECONFIG
    return Connection(
        cluster=cluster,
        kubeconfig=found["kubeconfig_path"] if from_file else "",
        context="" if own else found["kube_context"],
        secret=found["secret_name"] if credentials == Cluster.Credentials.SECRET else "",
        reachability=reachability_of(found),
    )


REACHABILITY_FIELDS = ("reachable", "unreachable_since", "next_probe_at", "last_error", "failures")


def reachability_of(row: dict) -> Reachability:
    """A cluster's reachability from its row's REACHABILITY_FIELDS."""
    return Reachability(
        reachable=row["reachable"], since=row["unreachable_since"],
        next_probe_at=row["next_probe_at"], last_error=row["last_error"],
        failures=row["failures"],
    )
