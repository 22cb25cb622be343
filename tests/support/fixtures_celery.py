"""Fixtures for work that goes through Celery: a real broker (Redis), real worker processes,
and a broker that is down.

- `celery_broker(url, queue=...)`: point the test process's Celery app (and the settings the
  portal reads) at a broker; tasks are sent, not run eagerly.
- `broker_down`: the broker cannot be reached (a closed port): sends fail as they would.
- `celery_worker`: a factory starting real `celery worker` processes on Redis and the test
  database, consuming a queue of the test's own (the test process sends there too), so that
  no test's messages reach another test's worker.
- every test starts with Celery's "a task is running here" flag clear (see
  `_results_can_be_waited_on`).
- `celery_beat`: a factory starting a real `celery beat` sending one periodic sweep every
  second to the worker's queue (every other one waits an hour).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from celery._state import _set_task_join_will_block
from django.conf import settings
from django.test import override_settings

from portal.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
CLOSED_PORT_BROKER = "redis://127.0.0.1:1/0"


@contextmanager
def celery_broker(url: str, *, queue: str = "celery") -> Iterator[None]:
    names = ("task_always_eager", "broker_url", "result_backend", "task_default_queue")
    saved = {name: celery_app.conf[name] for name in names}
    celery_app.conf.update(
        task_always_eager=False, broker_url=url, result_backend=None, task_default_queue=queue
    )
    celery_app._after_fork()  # drop the pooled connections to the previous broker
    try:
        with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=url):
            yield
    finally:
        celery_app.conf.update(saved)
        celery_app._after_fork()


@pytest.fixture(autouse=True)
def _results_can_be_waited_on() -> None:
    """Celery refuses `result.get()` inside a task through one process-wide flag, which each
    eager task sets on entry and puts back on exit. Two eager tasks overlapping in threads (the
    live server's, a test's own) put it back out of order and leave it set, so a later test's
    `.delay(...).get()` in the same process would be refused: each test starts with it clear."""
    _set_task_join_will_block(False)


@pytest.fixture
def broker_down() -> Iterator[None]:
    with celery_broker(CLOSED_PORT_BROKER):
        yield


class Worker:
    """One `celery worker` process; `kill()` is a crash (SIGKILL), `stop()` a shutdown."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def output(self) -> str:
        self.stop()
        return self.process.stdout.read().decode(errors="replace") if self.process.stdout else ""


def wait_until(condition: Callable[[], object], *, timeout: float, every: float = 0.05) -> object:
    """Poll `condition` until it is truthy (and return it), or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"not true within {timeout} s: {condition}")


@pytest.fixture
def celery_worker(redis_url, transactional_db) -> Iterator[Callable[..., Worker]]:
    """`celery_worker(loglevel=..., **env)` starts a worker on this test's own queue (`.queue`
    names it)."""
    queue = f"test-{uuid.uuid4().hex[:8]}"
    db = settings.DATABASES["default"]
    base_env = os.environ | {
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "CELERY_BROKER_URL": redis_url,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
    }
    workers: list[Worker] = []

    def start(*, loglevel: str = "WARNING", **env: str) -> Worker:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "portal", "worker",
                "--pool=solo", "--concurrency=1", "--without-heartbeat", "--without-gossip",
                "--without-mingle", "-Q", queue, f"--loglevel={loglevel}",
                f"--hostname=test-{uuid.uuid4().hex[:6]}@%h",
            ],
            cwd=ROOT, env=base_env | env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        worker = Worker(process)
        workers.append(worker)
        return worker

    start.queue = queue  # type: ignore[attr-defined]
    with celery_broker(redis_url, queue=queue):
        try:
            yield start
        finally:
            for worker in workers:
                worker.stop()
            import redis

            redis.Redis.from_url(redis_url).delete(queue, f"{queue}\x06\x163")


# The periodic sweeps' periods: `celery_beat` quiets all but the one a test listens to.
SWEEP_PERIODS = (
    "WORKLOAD_OBSERVE_SECONDS", "WORKLOAD_RECONCILE_SWEEP_SECONDS",
    "TENANT_RECONCILE_SWEEP_SECONDS", "OUTBOX_SWEEP_SECONDS", "INVENTORY_SYNC_INTERVAL",
    "HEALTH_INGEST_INTERVAL", "IDLE_GPU_SWEEP_SECONDS", "NOTEBOOK_CULL_SWEEP_SECONDS",
    "CLUSTER_PROBE_SECONDS",
)


@pytest.fixture
def celery_beat(celery_worker, redis_url, tmp_path) -> Iterator[Callable[[str], Path]]:
    """`celery_beat(period)` starts beat with the sweep of `period` (one of SWEEP_PERIODS) every
    second, on the worker's queue; returns its log. Stopped at the test's end."""
    processes: list[subprocess.Popen] = []
    db = settings.DATABASES["default"]

    def start(period: str) -> Path:
        env = os.environ | {name: "3600" for name in SWEEP_PERIODS} | {
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "CELERY_BROKER_URL": redis_url, "CELERY_TASK_ALWAYS_EAGER": "false",
            "CELERY_TASK_DEFAULT_QUEUE": celery_worker.queue, period: "1",
            "BEAT_LOCK_TTL_SECONDS": "3",
        }
        log = tmp_path / "beat.log"
        with log.open("wb") as out:
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "portal", "beat", "--loglevel=INFO"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            ))
        return log

    yield start
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
