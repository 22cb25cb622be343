"""portalctl against a live portal: its own config folder and kubeconfig per test, run
in-process through its Typer app (fast) or as `python -m portalctl` (the real process)."""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from portalctl.app import app


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def cli_home(tmp_path, monkeypatch) -> Path:
    """A config folder and a kubeconfig of the test's own; no token from the environment."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kube" / "config"))
    monkeypatch.delenv("PORTALCTL_TOKEN", raising=False)
    monkeypatch.delenv("PORTALCTL_SERVER", raising=False)
    return tmp_path


@pytest.fixture
def portalctl(cli_home):
    """`portalctl(*args, token=..., server=...)`: run a command, get its exit code and output."""

    def run(*args: str, token: str = "", server: str = "") -> Run:
        env = {"PORTALCTL_TOKEN": token or None, "PORTALCTL_SERVER": server or None}
        result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr)

    return run
