"""The fleet gateway's contract: what the portal may ask of a cluster, and how it fails."""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

import urllib3.exceptions

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Reachability:
    """Whether a cluster answered lately, as the portal recorded it: while `reachable` is False
    and `next_probe_at` has not come, calls to it fail at once (no network) with
    `ClusterUnreachable`."""

    reachable: bool = True
    since: datetime | None = None
    next_probe_at: datetime | None = None
    last_error: str = ""
    failures: int = 0

    def waiting(self, now: datetime) -> bool:
        """Whether a call now should fail fast: unreachable, and its next try not yet due."""
        return not self.reachable and self.next_probe_at is not None and now < self.next_probe_at


@dataclass(frozen=True)
class Connection:
    """How to reach one cluster: what its gateway is built from (never a credential itself).

    `kubeconfig`/`context`: a kubeconfig file on the portal's hosts; `secret`: the name of a
    Secret in the portal's own namespace whose key `kubeconfig` holds one; neither: the portal's
    own environment (KUBECONFIG, or the in-cluster account inside a pod).
    """

    cluster: str
    kubeconfig: str = ""
    context: str = ""
    secret: str = ""
    # Observed, not configured: a change of it never rebuilds the cluster's client.
    reachability: Reachability = field(default_factory=Reachability, compare=False)


class FleetError(Exception):
    """A cluster call failed; `status` is the HTTP status when the API answered."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return f"{self.status} {self.message}" if self.status else self.message


class TransientFleetError(FleetError):
    """Worth retrying later: a conflict with a concurrent writer (409), throttling (429),
    server errors (5xx), timeouts, lost connections."""


class PermanentFleetError(FleetError):
    """Retrying will not help: a rejected or invalid request (4xx), a missing API kind."""


class ClusterUnreachable(TransientFleetError):
    """The cluster is marked unreachable and its next try is not due: failed without a request
    (the message says since when, why, and when it is tried again)."""


# Answers of something in front of the API server that could not reach it.
UNREACHABLE_STATUSES = frozenset({502, 503, 504})


def is_connection_failure(error: FleetError) -> bool:
    """Whether `error` says the cluster did not answer (refused, timed out, TLS failed, a proxy
    could not reach it), as opposed to an answer the API server gave (409, 429, 4xx, 500)."""
    if not isinstance(error, TransientFleetError) or isinstance(error, ClusterUnreachable):
        return False
    return error.status is None or error.status in UNREACHABLE_STATUSES


def _api_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body:
        try:
            parsed = json.loads(body)
        except ValueError:
            return body[:500]
        if isinstance(parsed, dict) and parsed.get("message"):
            return str(parsed["message"])
    return str(getattr(exc, "reason", None) or exc.__class__.__name__)


def classify(exc: BaseException) -> FleetError:
    """Turn any failure of a cluster call into a transient or permanent fleet error."""
    if isinstance(exc, FleetError):
        return exc
    # kubernetes' ApiException (and the dynamic client's subclasses) carry the HTTP status.
    status = getattr(exc, "status", None)
    if isinstance(status, int) and not isinstance(status, bool):
        message = _api_message(exc)
        # Status 0 is the client's own wrapper for a failed TLS handshake: a connection problem.
        # 409 is another writer (a controller, a finalizer) getting there first: try again.
        if status in (0, 409, 429) or status >= 500:
            return TransientFleetError(message, status=status or None)
        return PermanentFleetError(message, status=status)
    if isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError):
        return TransientFleetError(f"{exc.__class__.__name__}: {exc}")
    if isinstance(exc, OSError):
        return TransientFleetError(f"{exc.__class__.__name__}: {exc}")
    return PermanentFleetError(f"{exc.__class__.__name__}: {exc}")


class FleetGateway(abc.ABC):
    """The one way the portal reads and changes a cluster (real or simulated).

    Every method raises `TransientFleetError` or `PermanentFleetError`, never a client library's
    own exception. Objects go in and come out as plain dicts in their Kubernetes JSON form.
    """

    backend: ClassVar[str]

    def close(self) -> None:  # noqa: B027 (most gateways hold nothing open)
        """Release what the gateway holds open (its connection pool); it is not used again."""

    def probe(self) -> str:
        """Ask the cluster whether it answers (one cheap request); its version, if it says."""
        return ""

    @abc.abstractmethod
    def apply(self, *, manifests: list[Manifest]) -> list[Manifest]:
        """Server-side apply each manifest in order (forced, one field manager); idempotent."""

    @abc.abstractmethod
    def create(self, *, manifest: Manifest) -> bool:
        """Create the object if it does not exist (POST); False when it already did, and then it
        is left exactly as it is (keys generated once must never be overwritten)."""

    @abc.abstractmethod
    def get(
        self, *, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Manifest | None:
        """The object as stored, or None when it does not exist."""

    @abc.abstractmethod
    def delete(
        self, *, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> bool:
        """Ask for deletion; True if it was there, False if it was already gone (also success)."""

    @abc.abstractmethod
    def list(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Manifest]:
        """Objects of a kind, in one namespace or all of them, optionally label-selected."""

    def list_nodes(self, *, label_selector: str | None = None) -> list[Manifest]:
        """The cluster's Node objects, optionally label-selected (e.g. by GPU product)."""
        return self.list(api_version="v1", kind="Node", label_selector=label_selector)

    def list_pods_on_node(self, *, node: str) -> list[Manifest]:
        """The Pods bound to one node, in every namespace (a drain reads only these)."""
        pods = self.list(api_version="v1", kind="Pod")
        return [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") == node]

    def pending_workloads(
        self, *, namespace: str, local_queue: str, limit: int, offset: int
    ) -> list[Manifest]:
        """Kueue's visibility API: one page of the LocalQueue's pending workloads
        (PendingWorkloadsSummary items), in queue order."""
        raise PermanentFleetError("this fleet serves no Kueue visibility API", status=404)

    @abc.abstractmethod
    def patch_node(self, *, name: str, patch: Manifest) -> Manifest:
        """JSON merge patch a Node (cordon: {"spec": {"unschedulable": true}}); returns it."""

    @abc.abstractmethod
    def evict_pod(self, *, name: str, namespace: str) -> None:
        """Evict a Pod (policy/v1); a PodDisruptionBudget refusal (429) is transient."""
