"""gunicorn in the production posture, and a client that speaks to it as the TLS proxy would."""

from __future__ import annotations

import hashlib
import http.client
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings

from .options import BASE_DIR, REQUEST_TIMEOUT, SERVER_START_TIMEOUT, Options


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# This run's name in the cache's keys.
RUN = secrets.token_hex(4)


def server_environment(options: Options) -> dict[str, str]:
    """The production posture: DEBUG off, SECRET_KEY and ALLOWED_HOSTS from the environment,
    WhiteNoise serving the manifest of collected static files, HTTPS at the proxy."""
    return {
        key: value for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "BENCH_", "PYTEST"))
    } | {
        "PORTAL_ENV": "production",
        "SECRET_KEY": options.secret_key,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": options.database_url,
        # Keys of this server only: values an earlier run cached under the same data stamps
        # (a data set cloned again has them again) are never read as this run's.
        "CACHE_URL": _with_key_prefix(options.cache_url, f"bench-{RUN}"),
        # The bench signs a few accounts in for thousands of API requests: no 429s.
        "API_THROTTLE_USER_RATE": "1000000/hour",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "bench.settings",
    }


def _with_key_prefix(url: str, prefix: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}key_prefix={prefix}"


def _static_fingerprint() -> str:
    """Every static file the finders see, by name, size and modification time."""
    from django.contrib.staticfiles import finders

    digest = hashlib.sha256()
    for finder in finders.get_finders():
        for path, storage in finder.list(["CVS", ".*", "*~"]):
            stat = os.stat(storage.path(path))
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def collect_static(options: Options) -> bool:
    """`collectstatic` as production runs it (hashed names, a manifest, compressed copies),
    unless the files collected last time are still those the finders see. True if it ran."""
    root = Path(settings.STATIC_ROOT)
    marker = root / ".bench-collected"
    fingerprint = _static_fingerprint()
    if (root / "staticfiles.json").exists() and marker.exists() \
            and marker.read_text() == fingerprint:
        return False
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--no-input", "-v", "0"],
        cwd=BASE_DIR, env=server_environment(options), check=True, timeout=600,
    )
    marker.write_text(fingerprint)
    return True


def server_command(options: Options, port: int) -> list[str]:
    """gunicorn as production starts it: the portal's config (preloaded, start-up heap frozen
    in each worker), then this run's address, workers and timeout."""
    return [
        sys.executable, "-m", "gunicorn", "--config", "python:portal.gunicorn_conf",
        "portal.wsgi:application",
        "--bind", f"127.0.0.1:{port}", "--workers", str(options.workers),
        "--timeout", str(REQUEST_TIMEOUT), "--log-level", "warning",
    ]


def start_server(options: Options, port: int, log_path: Path,
                 extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    env = server_environment(options) | (extra_env or {})
    log = log_path.open("wb")
    server = subprocess.Popen(server_command(options, port), cwd=BASE_DIR,  # noqa: S603
                              env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"gunicorn exited with {server.returncode}: see {log_path}")
        try:
            status, _ = fetch(port, "/healthz", None)
            if status == 200 and len(worker_pids(server.pid)) >= options.workers:
                return server
        except OSError:
            pass
        time.sleep(0.2)
    stop_process(server)
    raise SystemExit(f"gunicorn did not answer within {SERVER_START_TIMEOUT} s: see {log_path}")


def stop_process(process: subprocess.Popen, *, timeout: float = 30) -> None:
    """Asks `process` to stop (SIGTERM), and kills it if it has not after `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def worker_pids(master: int) -> list[int]:
    try:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    except OSError:
        return []
    return [int(pid) for pid in children]


def peak_rss_mib(pid: int) -> float | None:
    """The process's peak resident set (VmHWM) so far, in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def fetch(port: int, path: str, cookie: str | None) -> tuple[int, int]:
    """GET `path` as a browser behind the TLS proxy would; (status, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        headers = {"X-Forwarded-Proto": "https", "Accept": "text/html,application/json"}
        if cookie:
            headers["Cookie"] = f"{settings.SESSION_COOKIE_NAME}={cookie}"
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, len(response.read())
    finally:
        conn.close()

