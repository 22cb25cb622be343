"""Fixtures for code that talks to the fleet: an emulated cluster, or the simulated one.

Import them into a conftest.py:
    from tests.support.fixtures_kube import (
        fleet_clock, kube_emulator, kube_gateway, simulated_gateway,
    )
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.fleet import gateway_override
from core.fleet.kubernetes import KubernetesFleetGateway
from demo.fleet.simulated import SimulatedFleetGateway

from .kube_emulator import KubeEmulator, running_kube_emulator


@pytest.fixture
def kube_emulator() -> Iterator[KubeEmulator]:
    """A fresh Kubernetes API emulator on 127.0.0.1, serving the portal's custom resources."""
    with running_kube_emulator() as emulator:
        yield emulator


@pytest.fixture
def kube_gateway(kube_emulator: KubeEmulator, tmp_path: Path) -> Iterator[KubernetesFleetGateway]:
    """The real Kubernetes gateway, pointed at `kube_emulator`; `get_gateway()` returns it."""
    gateway = KubernetesFleetGateway(
        api_client=kube_emulator.api_client(),
        request_timeout=2.0,
        # Per test: ports are reused across runs, and discovery caches per host:port.
        discovery_cache_file=str(tmp_path / "kube-discovery.json"),
    )
    with gateway_override(gateway):
        yield gateway
    gateway.api_client.close()


@pytest.fixture
def simulated_gateway(db: None) -> Iterator[SimulatedFleetGateway]:
    """The demo fleet (objects in the test database); `get_gateway()` returns it."""
    with gateway_override(SimulatedFleetGateway()) as gateway:
        yield gateway


class FleetClock:
    """The simulated fleet's own clock, moved by hand (nothing else's time moves)."""

    def __init__(self) -> None:
        from django.utils import timezone

        self.moment = timezone.now()

    def now(self):
        return self.moment

    def advance(self, seconds: float) -> None:
        from datetime import timedelta

        self.moment += timedelta(seconds=seconds)


@pytest.fixture
def fleet_clock(simulated_gateway: SimulatedFleetGateway, monkeypatch) -> FleetClock:
    """Stop the simulated fleet's time; `fleet_clock.advance(seconds)` lets it pass, so its
    controllers are seen mid-way and done without waiting."""
    clock = FleetClock()
    monkeypatch.setattr("demo.fleet.simulated.timezone", clock)
    return clock
