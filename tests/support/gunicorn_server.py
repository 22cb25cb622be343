"""The portal under real gunicorn (the production config), on 127.0.0.1 and the test
database, for tests of what only several worker processes show (started and stopped as the
benchmark does it: bench.server)."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings

from bench.server import free_port, stop_process

__all__ = ["free_port", "get", "portal_database_url", "serve_portal", "stop", "wait_until_serving"]

ROOT = Path(__file__).resolve().parents[2]


def get(port: int, path: str, headers: dict | None = None) -> tuple[int, str, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read().decode(), dict(response.getheaders())
    finally:
        conn.close()


def portal_database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def serve_portal(port: int, *, workers: int, log: Path, **env: str) -> subprocess.Popen:
    """gunicorn serving portal.wsgi; its access log (worker pid, then path) goes to `log`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    base |= {
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "SECRET_KEY": "a-key-for-this-test",
        "DATABASE_URL": portal_database_url(),
        "METRICS_ALLOWED_NETWORKS": "127.0.0.1/32",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--config", "python:portal.gunicorn_conf",
         "portal.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
         "--log-level", "warning", "--access-logfile", str(log),
         "--access-logformat", "%(p)s %(U)s"],
        cwd=ROOT, env=base | env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def wait_until_serving(server: subprocess.Popen, port: int, *, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stdout.read().decode()
        try:
            get(port, "/healthz")
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("gunicorn did not answer")


def stop(server: subprocess.Popen) -> str:
    """Stops the server; returns what it printed."""
    stop_process(server)
    return server.stdout.read().decode(errors="replace") if server.stdout else ""
