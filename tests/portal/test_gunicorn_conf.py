"""gunicorn's config: the application is loaded once in the master, and each worker freezes the
start-up heap, then what its first requests keep, so full garbage collections stop walking
them."""

import http.client
import itertools
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.options import Options
from bench.server import server_command

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(port: int) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def _serve(port: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    env |= {"DJANGO_SETTINGS_MODULE": "portal.settings", "SECRET_KEY": "a-key-for-this-test"}
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--config", "python:portal.gunicorn_conf",
         "tests.support.gc_probe_app:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def _first_answer(server: subprocess.Popen, port: int) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stdout.read().decode()
        try:
            return int(_get(port))
        except OSError:
            time.sleep(0.05)
    raise AssertionError("gunicorn did not answer")


def test_a_worker_starts_with_the_preloaded_start_up_heap_frozen():
    port = _free_port()
    server = _serve(port)
    try:
        frozen = _first_answer(server, port)
        # Django, the apps and their URL patterns: tens of thousands of objects, none of which a
        # full collection in the worker has to walk again.
        assert frozen > 20_000
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_what_the_first_requests_keep_is_frozen_after_the_1st_2nd_4th_request():
    port = _free_port()
    server = _serve(port)
    try:
        # Each answer is the count frozen before that request; every request keeps 1,000 more.
        counts = [_first_answer(server, port)] + [int(_get(port)) for _ in range(4)]
        after_1st, after_2nd, after_3rd, after_4th = (b - a for a, b in itertools.pairwise(counts))
        assert after_1st >= 1000 and after_2nd >= 1000  # frozen after the 1st and the 2nd
        assert after_3rd == 0  # not after the 3rd
        assert after_4th >= 2000  # after the 4th: what the 3rd and the 4th kept
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_bench_serves_the_portal_with_the_production_gunicorn_config():
    options = Options(
        database_url="postgres://postgres@127.0.0.1:5432/portal_bench", scale=0.01, seed=42,
        requests=2, concurrency=2, workers=2, out=ROOT / "artifacts" / "bench",
        secret_key="a-key-for-this-test", seconds_per_mode=1, meter_hours=1, celery_hours=1,
        redis_url="redis://127.0.0.1:6379/0",
    )
    command = server_command(options, 8123)
    assert command[command.index("--config") + 1] == "python:portal.gunicorn_conf"
    assert "portal.wsgi:application" in command
