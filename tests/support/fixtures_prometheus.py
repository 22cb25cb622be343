"""A real Prometheus (Debian package `prometheus`) on 127.0.0.1, loaded with series for tests.

Series are written as OpenMetrics with timestamps, turned into TSDB blocks by `promtool tsdb
create-blocks-from openmetrics`, and served by `prometheus` started on a free port; the
fixture stops it by its PID. Use `prometheus_server(series)` (session-scoped factory: one
server per distinct data set) or `prometheus_down_url` (a port nobody listens on).
"""

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

# {metric name: [(labels, [(unix seconds, value), ...]), ...]}
Series = dict[str, list[tuple[dict[str, str], list[tuple[float, float]]]]]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def openmetrics(series: Series) -> str:
    """OpenMetrics text: one family per metric (declared gauge), samples in time order."""
    lines = []
    for name in sorted(series):
        lines.append(f"# TYPE {name} gauge")
        for labels, samples in series[name]:
            rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
            for at, value in sorted(samples):
                lines.append(f"{name}{{{rendered}}} {value} {at:.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def parse_text_exposition(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of each sample of a Prometheus text-format scrape (no timestamps)."""
    import re

    samples = []
    pattern = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)\s*$")
    label = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = pattern.match(line)
        if match:
            labels = {k: v.replace('\\"', '"').replace("\\\\", "\\")
                      for k, v in label.findall(match[2] or "")}
            samples.append((match[1], labels, float(match[3])))
    return samples


@dataclass
class PrometheusServer:
    url: str
    process: subprocess.Popen
    data_dir: Path

    def query(self, promql: str) -> list[dict]:
        response = requests.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=5)
        response.raise_for_status()
        return response.json()["data"]["result"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def start_prometheus(series: Series, workdir: Path) -> PrometheusServer:
    if not Path(PROMETHEUS).exists() or not Path(PROMTOOL).exists():
        pytest.fail("Prometheus is not installed: `make install-test` installs the Debian "
                    "package (apt-get install prometheus).")
    workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / "data.om"
    data.write_text(openmetrics(series))
    tsdb = workdir / "tsdb"
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(data), str(tsdb)],
                   check=True, capture_output=True, timeout=120)
    config = workdir / "prometheus.yml"
    config.write_text("global: {}\n")
    port = _free_port()
    log = (workdir / "prometheus.log").open("w")
    process = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=30d"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    server = PrometheusServer(url=f"http://127.0.0.1:{port}", process=process, data_dir=workdir)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited: {(workdir / 'prometheus.log').read_text()}")
        try:
            if requests.get(f"{server.url}/-/ready", timeout=1).status_code == 200:
                return server
        except requests.RequestException:
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError("prometheus did not become ready within 30 s")


@pytest.fixture(scope="session")
def prometheus_server(tmp_path_factory) -> Iterator:
    """Factory: `prometheus_server(series)` → a running PrometheusServer holding `series`
    (one server per distinct data set for the whole session, stopped at its end)."""
    servers: dict[str, PrometheusServer] = {}

    def start(series: Series) -> PrometheusServer:
        key = openmetrics(series)
        if key not in servers:
            servers[key] = start_prometheus(series, tmp_path_factory.mktemp("prometheus"))
        return servers[key]

    yield start
    for server in servers.values():
        server.stop()


@pytest.fixture
def prometheus_down_url() -> str:
    """A Prometheus URL where nothing listens."""
    return f"http://127.0.0.1:{_free_port()}"
