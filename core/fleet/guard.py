"""A cluster that does not answer is its own problem: the guard every registry gateway wears.

Each call goes through `GuardedGateway`, which knows the cluster's reachability as it was read
with its connection. While the cluster is marked unreachable and its next try is not due, a call
fails at once with `ClusterUnreachable` (no request, no timeout to wait out), so a sweep or a
retry storm against a dead cluster costs nothing and holds up no other cluster's work.

A call that fails for want of an answer (`is_connection_failure`) is reported; so is the first
call that succeeds while the cluster is marked unreachable. The report is the function
FLEET_REACHABILITY names (the inventory records it, with its backoff, and queues the recovery);
it returns the reachability now, which the guard keeps for the rest of its calls. A cluster
that answers as it should is never written to: no database write per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import timezone

from .base import (
    ClusterUnreachable,
    Connection,
    FleetError,
    FleetGateway,
    Manifest,
    Reachability,
    is_connection_failure,
)

Report = Callable[[str, FleetError | None], Reachability]


def unreachable_message(cluster: str, reachability: Reachability) -> str:
    """Since when the cluster does not answer, why, and when it is tried again."""
    since = reachability.since.strftime("%Y-%m-%d %H:%M:%S UTC") if reachability.since else "now"
    retry = (
        f"; tried again at {reachability.next_probe_at.strftime('%H:%M:%S UTC')}"
        if reachability.next_probe_at
        else ""
    )
    why = f": {reachability.last_error}" if reachability.last_error else ""
    return f"cluster {cluster!r} is unreachable since {since}{why}{retry}"


class GuardedGateway(FleetGateway):
    """One cluster's pooled gateway, for one `get_gateway()`: each call fails fast while the
    cluster is unreachable and not due, and reports a lost or regained answer."""

    def __init__(self, gateway: FleetGateway, *, connection: Connection, report: Report) -> None:
        self.inner = gateway
        self.cluster = connection.cluster
        self.reachability = connection.reachability
        self._report = report
        self.backend = gateway.backend

    def __getattr__(self, name: str) -> Any:
        # What is not a gateway call (a Kubernetes gateway's `api_client`) is the inner one's.
        return getattr(self.inner, name)

    def _call(self, method: str, **kwargs: Any) -> Any:
        if self.reachability.waiting(timezone.now()):
            raise ClusterUnreachable(unreachable_message(self.cluster, self.reachability))
        try:
            result = getattr(self.inner, method)(**kwargs)
        except FleetError as exc:
            if is_connection_failure(exc):
                self.reachability = self._report(self.cluster, exc)
            raise
        if not self.reachability.reachable:
            self.reachability = self._report(self.cluster, None)
        return result

    def close(self) -> None:
        """The pool owns the inner gateway: nothing of this one's to close."""

    def probe(self) -> str:
        return self._call("probe")

    def apply(self, *, manifests: list[Manifest]) -> list[Manifest]:
        return self._call("apply", manifests=manifests)

    def create(self, *, manifest: Manifest) -> bool:
        return self._call("create", manifest=manifest)

    def get(
        self, *, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Manifest | None:
        return self._call("get", api_version=api_version, kind=kind, name=name, namespace=namespace)

    def delete(
        self, *, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> bool:
        return self._call(
            "delete", api_version=api_version, kind=kind, name=name, namespace=namespace
        )

    def list(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Manifest]:
        return self._call(
            "list",
            api_version=api_version,
            kind=kind,
            namespace=namespace,
            label_selector=label_selector,
        )

    def list_nodes(self, *, label_selector: str | None = None) -> list[Manifest]:
        return self._call("list_nodes", label_selector=label_selector)

    def list_pods_on_node(self, *, node: str) -> list[Manifest]:
        return self._call("list_pods_on_node", node=node)

    def pending_workloads(
        self, *, namespace: str, local_queue: str, limit: int, offset: int
    ) -> list[Manifest]:
        return self._call(
            "pending_workloads",
            namespace=namespace,
            local_queue=local_queue,
            limit=limit,
            offset=offset,
        )

    def patch_node(self, *, name: str, patch: Manifest) -> Manifest:
        return self._call("patch_node", name=name, patch=patch)

    def evict_pod(self, *, name: str, namespace: str) -> None:
        return self._call("evict_pod", name=name, namespace=namespace)
