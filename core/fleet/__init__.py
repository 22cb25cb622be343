"""The fleet gateway: the one place the portal talks to a cluster.

    from core.fleet import get_gateway, TransientFleetError
    get_gateway(workload.cluster_id).apply(manifests=[...])

Every call names its cluster (an inventory cluster's slug). FLEET_BACKEND picks the backend
("simulated" for the demo, "kubernetes" for real clusters); FLEET_CONNECTIONS names the function
that says how to reach a cluster (`Connection`), read on every `get_gateway()` so that a cluster
whose credentials changed gets a new client in every process. Gateways are pooled per cluster:
one client (and its connection pool and discovery) per cluster per process. Tests swap them with
`gateway_override(...)`: one gateway for every cluster, or one per cluster.

What `get_gateway()` returns wears a guard (guard.py): while the cluster is marked unreachable
and not due for another try, its calls fail at once; a call that gets no answer, or the first
that gets one again, is reported to the function FLEET_REACHABILITY names. A test's override is
returned as it is (its faults are the test's own).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from .base import (
    ClusterUnreachable,
    Connection,
    FleetError,
    FleetGateway,
    Manifest,
    PermanentFleetError,
    Reachability,
    TransientFleetError,
    classify,
    is_connection_failure,
)
from .guard import GuardedGateway, unreachable_message

__all__ = [
    "ClusterUnreachable",
    "Connection",
    "FleetError",
    "FleetGateway",
    "GuardedGateway",
    "Manifest",
    "PermanentFleetError",
    "Reachability",
    "TransientFleetError",
    "classify",
    "gateway_override",
    "get_gateway",
    "is_connection_failure",
    "reset_gateway",
    "set_gateway_for_tests",
    "unreachable_message",
]

Override = FleetGateway | Mapping[str, FleetGateway]

_lock = threading.Lock()
_pool: dict[str, tuple[Connection, FleetGateway]] = {}
_override: Override | None = None


def connection_for(cluster: str) -> Connection:
    """How to reach `cluster` now (PermanentFleetError: no such cluster, or it is retired)."""
    return import_string(settings.FLEET_CONNECTIONS)(cluster)


def _build(connection: Connection) -> FleetGateway:
    # Imported by name when first asked: the backends pull in the ORM or the (slow to import)
    # kubernetes client, and the simulated one is the demo's, which production does not install.
    return import_string(settings.FLEET_GATEWAYS[settings.FLEET_BACKEND])(connection=connection)


def get_gateway(cluster: str, *, fail_fast: bool = True) -> FleetGateway:
    """The gateway to `cluster` (or the one a test installed), pooled per process, guarded by
    the cluster's reachability as read now (`fail_fast=False`: tried even while it waits for
    its next try, as a person's connection check is)."""
    if _override is not None:
        if isinstance(_override, FleetGateway):
            return _override
        if cluster not in _override:
            raise PermanentFleetError(f"no cluster {cluster!r} in this test", status=404)
        return _override[cluster]
    connection = connection_for(cluster)
    with _lock:
        pooled = _pool.get(cluster)
        if pooled is None or pooled[0] != connection:
            if pooled is not None:
                pooled[1].close()
            pooled = _pool[cluster] = (connection, _build(connection))
        gateway = pooled[1]
    if not fail_fast:
        connection = replace(
            connection, reachability=replace(connection.reachability, next_probe_at=None)
        )
    return GuardedGateway(
        gateway, connection=connection, report=import_string(settings.FLEET_REACHABILITY)
    )


def reset_gateway() -> None:
    """Forget the built gateways; the next `get_gateway()` builds them from the settings."""
    with _lock:
        for _, gateway in _pool.values():
            gateway.close()
        _pool.clear()


def set_gateway_for_tests(gateway: Override | None) -> None:
    """Make `get_gateway()` return `gateway` for every cluster, or the mapping's gateway for
    each cluster it names (None removes the override)."""
    global _override
    _override = gateway


@contextmanager
def gateway_override(gateway: Override) -> Iterator[Any]:
    """`get_gateway()` returns `gateway` (or, for a mapping, each cluster's) inside the block,
    whatever it returned before."""
    previous = _override
    set_gateway_for_tests(gateway)
    try:
        yield gateway
    finally:
        set_gateway_for_tests(previous)


@receiver(setting_changed)
def _reset_on_fleet_setting_change(*, setting: str, **kwargs: Any) -> None:
    if setting.startswith("FLEET_"):
        reset_gateway()
