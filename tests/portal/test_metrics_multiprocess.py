"""/metrics under real gunicorn with several workers: one scrape sums every worker's counts
(Prometheus multiprocess mode, portal.gunicorn_conf), and counts an earlier run left in the
metrics directory are not summed in."""

import os
import re
import signal
from collections import Counter

import pytest
from prometheus_client.mmap_dict import MmapedDict, mmap_key

from tests.support.fixtures_celery import wait_until
from tests.support.gunicorn_server import (
    ROOT,
    free_port,
    get,
    serve_portal,
    stop,
    wait_until_serving,
)

pytestmark = pytest.mark.django_db

HEALTHZ = re.compile(
    r'^django_http_requests_total_by_view_transport_method_total\{[^}]*view="healthz"[^}]*\} '
    r"([0-9.e+]+)$",
    re.MULTILINE,
)


def _served_by(log) -> Counter:
    """/healthz requests answered, per worker pid (gunicorn's access log)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return Counter(line.split()[0] for line in lines if line.endswith(" /healthz"))


def _healthz_count(text: str) -> float:
    return sum(float(value) for value in HEALTHZ.findall(text))


def _scraped_healthz(port: int) -> float:
    return _healthz_count(get(port, "/metrics")[1])


def _leave_counts_of_an_earlier_run(directory) -> None:
    directory.mkdir()
    stale = MmapedDict(str(directory / "counter_4242.db"))
    key = mmap_key(
        "django_http_requests_total_by_view_transport_method",
        "django_http_requests_total_by_view_transport_method_total",
        ["method", "transport", "view"], ["GET", "http", "healthz"], "left by an earlier run",
    )
    stale.write_value(key, 1000.0, 0.0)
    stale.close()


def test_one_scrape_sums_the_requests_every_worker_served(tmp_path):
    metrics_dir = tmp_path / "metrics"
    _leave_counts_of_an_earlier_run(metrics_dir)
    port, log = free_port(), tmp_path / "access.log"
    server = serve_portal(port, workers=2, log=log, PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
    try:
        wait_until_serving(server, port)
        for _ in range(300):  # bounded: the kernel hands connections to both workers
            get(port, "/healthz")
            if len(_served_by(log)) == 2 and min(_served_by(log).values()) >= 3:
                break
        served = _served_by(log)
        assert len(served) == 2, served
        status, text, _ = get(port, "/metrics")
        assert status == 200
        # Every worker's requests, none of the earlier run's (the directory was emptied). A
        # worker writes its access line just after answering: the log may lag a moment.
        wait_until(lambda: _scraped_healthz(port) == sum(_served_by(log).values()), timeout=10)
        # What is read at scrape time is exported too, and the database's operations (counted
        # by the backend) once a request has used it: the first scrape did.
        assert "# TYPE portal_celery_task_outcomes_total counter" in text
        _, again, _ = get(port, "/metrics")
        assert re.search(r'^django_db_execute_total\{alias="default",vendor="postgresql"\} [1-9]',
                         again, re.MULTILINE), again

        # A worker that dies keeps its counts in the sum: counters never go back.
        os.kill(int(next(iter(served)).strip("<>")), signal.SIGKILL)  # gunicorn starts another
        wait_until(lambda: get(port, "/healthz") and len(_served_by(log)) == 3, timeout=60)
        wait_until(lambda: _scraped_healthz(port) == sum(_served_by(log).values()), timeout=10)
    finally:
        output = stop(server)
    assert "Traceback" not in output, output


def test_each_worker_alone_counts_only_its_own_requests_without_the_directory(tmp_path):
    port, log = free_port(), tmp_path / "access.log"
    server = serve_portal(port, workers=2, log=log, PROMETHEUS_MULTIPROC_DIR="")
    try:
        wait_until_serving(server, port)
        for _ in range(300):
            get(port, "/healthz")
            if len(_served_by(log)) == 2 and min(_served_by(log).values()) >= 3:
                break
        served = _served_by(log)
        assert len(served) == 2, served
        # What this test guards against: a scrape shows one worker's share only.
        assert _scraped_healthz(port) < sum(served.values())
    finally:
        stop(server)
    # Empty is unset (as .env.example leaves it): no metric files in the working directory.
    assert not list(ROOT.glob("counter_*.db"))
