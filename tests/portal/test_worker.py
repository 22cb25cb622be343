"""A task round-trips through Redis and a real Celery worker process (not eager)."""

import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from celery.backends.redis import RedisBackend
from celery.result import AsyncResult
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import override_settings
from django.utils import timezone

from portal.celery import app as celery_app
from portal.metrics import task_outcomes
from portal.tasks import clear_expired_sessions

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def celery_worker_process(redis_url, transactional_db):
    """A real `celery worker` on its own queue, using the test database."""
    queue = f"test-{uuid.uuid4().hex[:8]}"
    db = settings.DATABASES["default"]
    env = os.environ | {
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": redis_url,
        "CELERY_TASK_ALWAYS_EAGER": "false",
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "portal",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "-Q",
            queue,
            "--loglevel=WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    saved = {k: celery_app.conf[k] for k in ("task_always_eager", "broker_url", "result_backend")}
    celery_app.conf.update(task_always_eager=False, broker_url=redis_url, result_backend=redis_url)
    try:
        yield queue
    finally:
        celery_app.conf.update(saved)
        worker.terminate()
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


@pytest.mark.worker
def test_task_round_trips_through_redis_and_a_worker(celery_worker_process, redis_url):
    expired = Session.objects.create(
        session_key="e" * 32, session_data="", expire_date=timezone.now() - timedelta(days=1)
    )
    live = Session.objects.create(
        session_key="l" * 32, session_data="", expire_date=timezone.now() + timedelta(days=1)
    )
    backend = RedisBackend(app=celery_app, url=redis_url)
    with celery_app.connection_for_write(redis_url) as connection:
        sent = clear_expired_sessions.apply_async(
            queue=celery_worker_process, connection=connection
        )
    assert AsyncResult(sent.id, backend=backend, app=celery_app).get(timeout=60) == 1
    assert not Session.objects.filter(pk=expired.pk).exists()
    assert Session.objects.filter(pk=live.pk).exists()


@pytest.mark.worker
def test_metrics_report_the_outcomes_of_tasks_run_by_a_worker(
    celery_worker_process, redis_url, client
):
    key = ("portal.tasks.clear_expired_sessions", "success")
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=redis_url):
        before = task_outcomes().get(key, 0)
        backend = RedisBackend(app=celery_app, url=redis_url)
        with celery_app.connection_for_write(redis_url) as connection:
            sent = clear_expired_sessions.apply_async(
                queue=celery_worker_process, connection=connection
            )
        AsyncResult(sent.id, backend=backend, app=celery_app).get(timeout=60)
        deadline = time.monotonic() + 10  # the worker counts just after storing the result
        while task_outcomes().get(key, 0) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        text = client.get("/metrics").content.decode()

    line = next(
        row
        for row in text.splitlines()
        if row.startswith("portal_celery_task_outcomes_total{")
        and 'task="portal.tasks.clear_expired_sessions"' in row
        and 'outcome="success"' in row
    )
    assert float(line.rsplit(" ", 1)[1]) == before + 1
