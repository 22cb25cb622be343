"""Fixtures for code that talks to the fleet: an emulated cluster, or the simulated one.

Import them into a conftest.py:
    from tests.support.fixtures_kube import (
        fleet_clock, kube_emulator, kube_gateway, simulated_gateway,
    )
"""

import contextlib
import json
import os
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
def kube_gateway(
    kube_emulator: KubeEmulator, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[KubernetesFleetGateway]:
    """The real Kubernetes gateway, pointed at `kube_emulator`; `get_gateway("main")` returns it.
    With KUBE_CALL_LOG_DIR set, the requests it makes are logged there for the RBAC check."""
    gateway = KubernetesFleetGateway(
        api_client=kube_emulator.api_client(),
        request_timeout=2.0,
        # Per test: ports are reused across runs, and discovery caches per host:port.
        discovery_cache_file=str(tmp_path / "kube-discovery.json"),
    )
    log_dir = os.environ.get(CALL_LOG_ENV)
    recording = kube_emulator.recording() if log_dir else contextlib.nullcontext([])
    with gateway_override(gateway), recording as calls:
        yield gateway
    gateway.api_client.close()
    if log_dir:
        write_call_log(Path(log_dir), request.node.nodeid, calls)


CALL_LOG_ENV = "KUBE_CALL_LOG_DIR"


def write_call_log(directory: Path, test: str, calls: list) -> None:
    """Append the kubernetes client's requests (not a test's own) to this process's log."""
    directory.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with (directory / f"{worker}.jsonl").open("a") as log:
        for call in calls:
            if call.agent.startswith("OpenAPI-Generator"):
                role = (call.data or {}).get("roleRef") if isinstance(call.data, dict) else None
                entry = {"test": test, "method": call.method, "path": call.path,
                         "params": call.params, "created": call.created,
                         "data": {"roleRef": role} if role else None}
                log.write(json.dumps(entry) + "\n")


@pytest.fixture
def simulated_gateway(db: None) -> Iterator[SimulatedFleetGateway]:
    """The demo fleet (objects in the test database); `get_gateway("main")` returns it."""
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


def pytest_sessionstart(session: pytest.Session) -> None:
    """A run's call log starts empty (workers only write once their tests have run)."""
    directory = os.environ.get(CALL_LOG_ENV)
    if directory and not hasattr(session.config, "workerinput"):
        for log in Path(directory).glob("*.jsonl"):
            log.unlink()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With KUBE_CALL_LOG_DIR set, the run fails if any logged call is not granted by
    deploy/base/rbac (checked once, by the process that ran or coordinated every test)."""
    directory = os.environ.get(CALL_LOG_ENV)
    if not directory or hasattr(session.config, "workerinput"):
        return
    from tests.deploy.rbac_rules import refused_in_logs

    refused = refused_in_logs(Path(directory))
    if refused:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.line("")
            reporter.write_line("Kubernetes calls deploy/base/rbac does not grant:", red=True)
            for line in refused:
                reporter.write_line(f"  {line}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
