"""A Redis of the test's own, which the test may stop (kill by its process id), and the
suite's shared Redis database left empty at the end.

- `own_redis`: a `redis-server` on a free port of 127.0.0.1, no persistence; `.url` (database
  0), `.kill()` (SIGKILL: Redis goes away as in an outage). Never the shared Redis on 6379.
- the session fixture `_redis_left_clean` flushes the database index the suite used (see
  `suite_redis_url`): the suite leaves no keys behind (queues, results, unacked messages).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OwnRedis:
    """A redis-server process this test started."""

    def __init__(self, process: subprocess.Popen, port: int) -> None:
        self.process = process
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


@pytest.fixture
def own_redis(tmp_path) -> Iterator[OwnRedis]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is not installed (Debian package redis-server)")
    port = _free_port()
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path), "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    redis = OwnRedis(process, port)
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                redis.kill()
                pytest.fail(f"redis-server did not start on 127.0.0.1:{port}")
            time.sleep(0.05)
    try:
        yield redis
    finally:
        redis.kill()


def suite_redis_url() -> str:
    """TEST_REDIS_URL; each parallel test process (pytest-xdist) has a Redis database of its own
    after it, so that no test sees another process's queues or unacknowledged messages."""
    url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return url
    base, _, db = url.rpartition("/")
    return f"{base}/{(int(db or 0) + int(worker[2:])) % 16}"


# Whether this test process handed the suite's Redis database to a test (only then is it ours
# to flush at the end).
_used = {"redis": False}


@pytest.fixture
def redis_url() -> str:
    """The suite's Redis database for this test process (`suite_redis_url`)."""
    _used["redis"] = True
    return suite_redis_url()


@pytest.fixture(scope="session", autouse=True)
def _redis_left_clean() -> Iterator[None]:
    """At the end, the suite's Redis database is flushed: no queue, result or unacked message
    of a test outlives the run."""
    yield
    if not _used["redis"]:
        return
    import redis

    # A Redis that is not there holds nothing to leave behind.
    with contextlib.suppress(redis.exceptions.ConnectionError):
        redis.Redis.from_url(suite_redis_url(), socket_connect_timeout=2).flushdb()
