"""The Celery side of /metrics, read at scrape time: messages waiting in each queue (from the
Redis broker, absent while it is down) and when beat last sent each periodic task."""

import os
import re
import subprocess
import sys
import time

import pytest

from bench.server import stop_process
from portal.celery import app as celery_app
from tests.support.fixtures_celery import CLOSED_PORT_BROKER, ROOT, celery_broker, wait_until
from tests.support.gunicorn_server import portal_database_url

BEAT_METRIC = re.compile(
    r'^portal_beat_last_run_timestamp_seconds\{task="outbox-sweep"\} ([0-9.e+]+)$', re.MULTILINE
)


def _scrape(client) -> str:
    response = client.get("/metrics")  # the test client is 127.0.0.1: an allowed scraper
    assert response.status_code == 200
    return response.content.decode()


def _queue_length(client, queue: str) -> float | None:
    pattern = rf'^portal_celery_queue_length\{{queue="{re.escape(queue)}"\}} ([0-9.e+]+)$'
    found = re.search(pattern, _scrape(client), re.MULTILINE)
    return None if found is None else float(found.group(1))


def test_queue_length_counts_the_messages_waiting_until_a_worker_takes_them(
    client, celery_worker
):
    queue = celery_worker.queue
    assert _queue_length(client, queue) == 0
    for _ in range(3):
        celery_app.send_task("portal.tasks.clear_expired_sessions")
    assert _queue_length(client, queue) == 3
    celery_worker()
    wait_until(lambda: _queue_length(client, queue) == 0, timeout=60)


@pytest.mark.django_db
def test_metrics_answer_without_queue_lengths_while_the_broker_is_down(client):
    with celery_broker(CLOSED_PORT_BROKER):
        started = time.monotonic()
        text = _scrape(client)
    assert time.monotonic() - started < 10  # short timeouts: the scrape is not held long
    assert "portal_celery_queue_length{" not in text
    assert "django_http_requests_total_by_view_transport_method_total" in text


def test_beat_last_run_is_when_the_real_beat_last_sent_the_task(client, celery_worker):
    before = time.time()
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "beat", "--loglevel=WARNING",
         "--pidfile=", "-S", "django_celery_beat.schedulers:DatabaseScheduler"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env={
            **os.environ,
            "DATABASE_URL": portal_database_url(),
            "CELERY_BROKER_URL": celery_app.conf.broker_url,
            "CELERY_TASK_DEFAULT_QUEUE": celery_worker.queue,
            "OUTBOX_SWEEP_SECONDS": "1",
        },
    )
    try:
        sent = wait_until(lambda: BEAT_METRIC.search(_scrape(client)), timeout=60)
        first = float(sent.group(1))
        assert first >= before - 1
        # A later send moves it on: the value is when beat last sent it, not its first time.
        wait_until(
            lambda: float(BEAT_METRIC.search(_scrape(client)).group(1)) > first, timeout=30
        )
    finally:
        stop_process(beat, timeout=20)
