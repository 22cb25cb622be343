"""Tasks round-trip through Redis and real Celery worker processes (not eager), and work a
worker was doing when it was killed resumes promptly, once, when a worker is back."""

import time
from datetime import timedelta

import pytest
import redis
from celery.backends.redis import RedisBackend
from celery.result import AsyncResult, allow_join_result
from django.contrib.sessions.models import Session
from django.utils import timezone

from core.metrics import task_outcomes
from core.models import AuditEvent, OutboxEmail
from core.tasks import clear_expired_sessions
from portal.celery import app as celery_app
from tenants.access.services import tenant_create
from tenants.models import Tenant
from tests.support.fixtures_celery import wait_until


@pytest.mark.worker
def test_task_round_trips_through_redis_and_a_worker(celery_worker, redis_url):
    celery_worker(CELERY_RESULT_BACKEND=redis_url)
    expired = Session.objects.create(
        session_key="e" * 32, session_data="", expire_date=timezone.now() - timedelta(days=1)
    )
    live = Session.objects.create(
        session_key="l" * 32, session_data="", expire_date=timezone.now() + timedelta(days=1)
    )
    sent = clear_expired_sessions.apply_async()
    backend = RedisBackend(app=celery_app, url=redis_url)
    # This process is no worker: waiting on a result is fine here, whatever flag an earlier
    # test in the process left set.
    with allow_join_result():
        assert AsyncResult(sent.id, backend=backend, app=celery_app).get(timeout=60) == 1
    assert not Session.objects.filter(pk=expired.pk).exists()
    assert Session.objects.filter(pk=live.pk).exists()


@pytest.mark.worker
def test_metrics_report_the_outcomes_of_tasks_run_by_a_worker(celery_worker, redis_url, client):
    celery_worker(CELERY_RESULT_BACKEND=redis_url)
    key = ("portal.tasks.clear_expired_sessions", "success")
    before = task_outcomes().get(key, 0)
    sent = clear_expired_sessions.apply_async()
    with allow_join_result():
        AsyncResult(sent.id, backend=RedisBackend(app=celery_app, url=redis_url),
                    app=celery_app).get(timeout=60)
    wait_until(lambda: task_outcomes().get(key, 0) > before, timeout=10)  # counted just after
    text = client.get("/metrics").content.decode()

    line = next(
        row
        for row in text.splitlines()
        if row.startswith("portal_celery_task_outcomes_total{")
        and 'task="portal.tasks.clear_expired_sessions"' in row
        and 'outcome="success"' in row
    )
    assert float(line.rsplit(" ", 1)[1]) == before + 1


@pytest.mark.worker
def test_work_left_pending_while_no_worker_ran_resumes_when_one_starts(
    celery_worker, platform_admin
):
    # Mail owed while the broker was unreachable: nothing in any queue says to send it.
    owed = OutboxEmail.objects.create(
        to=["olivia@example.com"], subject="Owed", body="", topic="test.owed"
    )

    celery_worker()  # its start queues the sweeps at once (not a beat period later)

    wait_until(lambda: OutboxEmail.objects.get(pk=owed.pk).sent_at, timeout=30)


# Small enough that the test takes seconds: the same relation as the defaults (README).
FAST_RECOVERY = {
    "CELERY_VISIBILITY_TIMEOUT": "8",
    "CELERY_TASK_TIME_LIMIT": "4",
    "CELERY_RETRY_BACKOFF_MAX": "2",
    "FLEET_REQUEST_TIMEOUT": "3",
}


@pytest.mark.worker
def test_a_reconcile_whose_worker_was_killed_resumes_on_another_worker_once(
    celery_worker, kube_emulator, tmp_path, redis_url
):
    fleet = {
        "FLEET_BACKEND": "kubernetes",
        "KUBECONFIG": str(kube_emulator.write_kubeconfig(tmp_path / "kubeconfig")),
    }
    # The first apply hangs: the worker is inside the task, the message taken but not acked.
    kube_emulator.delay(10, method="PATCH", path="/api/v1/namespaces/tenant-acme")
    first = celery_worker(**fleet, **FAST_RECOVERY)
    tenant = tenant_create(actor=None, slug="acme", name="Acme Labs")  # queues its reconcile
    wait_until(lambda: kube_emulator.requests("PATCH", "/api/v1/namespaces/tenant-acme"),
               timeout=30)

    first.kill()
    killed_at = time.monotonic()
    celery_worker(**fleet, **FAST_RECOVERY)

    wait_until(lambda: Tenant.objects.get(pk=tenant.pk).in_sync, timeout=60)
    # Well within two minutes of the kill (the new worker's start sweep, or the killed message
    # handed out again after the visibility timeout), not at the next periodic sweep.
    assert time.monotonic() - killed_at < 8 + 10 + 10
    # The killed worker's message comes back too (taken from the unacknowledged set) and finds
    # the tenant in sync: the work was done once, not once per delivery.
    unacked = redis.Redis.from_url(redis_url)
    wait_until(lambda: not unacked.hlen("unacked"), timeout=40)
    applied = AuditEvent.objects.filter(action="tenant.applied", object_id=str(tenant.pk))
    assert applied.count() == 1
