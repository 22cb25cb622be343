"""The fleet gateway: the one place the portal talks to a cluster.

    from core.fleet import get_gateway, TransientFleetError
    get_gateway().apply(manifests=[...])

FLEET_BACKEND picks the backend ("simulated" for the demo, "kubernetes" for a real cluster).
The gateway is built once per process; tests swap it with `gateway_override(...)`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from .base import (
    FleetError,
    FleetGateway,
    Manifest,
    PermanentFleetError,
    TransientFleetError,
    classify,
)

__all__ = [
    "FleetError",
    "FleetGateway",
    "Manifest",
    "PermanentFleetError",
    "TransientFleetError",
    "classify",
    "gateway_override",
    "get_gateway",
    "reset_gateway",
    "set_gateway_for_tests",
]

_lock = threading.Lock()
_cached: FleetGateway | None = None
_override: FleetGateway | None = None


def _build() -> FleetGateway:
    # Imported by name when first asked: the backends pull in the ORM or the (slow to import)
    # kubernetes client, and the simulated one is the demo's, which production does not install.
    return import_string(settings.FLEET_GATEWAYS[settings.FLEET_BACKEND])()


def get_gateway() -> FleetGateway:
    """The configured gateway (or the one a test installed), built once per process."""
    global _cached
    if _override is not None:
        return _override
    with _lock:
        if _cached is None:
            _cached = _build()
        return _cached


def reset_gateway() -> None:
    """Forget the built gateway; the next `get_gateway()` reads the settings again."""
    global _cached
    with _lock:
        _cached = None


def set_gateway_for_tests(gateway: FleetGateway | None) -> None:
    """Make `get_gateway()` return `gateway` (None removes the override)."""
    global _override
    _override = gateway


@contextmanager
def gateway_override(gateway: FleetGateway) -> Iterator[FleetGateway]:
    """`get_gateway()` returns `gateway` inside the block, whatever it returned before."""
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
