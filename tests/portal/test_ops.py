"""Operations endpoints: /healthz, /readyz (database and broker), /metrics."""

import pytest
from django.test import override_settings

from portal.celery import app as celery_app
from portal.tasks import clear_expired_sessions


def test_healthz_answers_without_touching_the_database(db, client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_checks_postgresql_and_redis(client, redis_url):
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=redis_url):
        response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["database"]["vendor"] == "postgresql"
    assert body["checks"]["broker"] == {"status": "ok", "ms": body["checks"]["broker"]["ms"]}


@pytest.mark.django_db
def test_readyz_is_503_with_the_failing_check_named_when_the_broker_is_down(client):
    with override_settings(
        CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL="redis://127.0.0.1:1/0"
    ):
        response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "fail"
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["broker"]["status"] == "fail"
    assert "Error" in body["checks"]["broker"]["detail"]


@pytest.mark.django_db
def test_metrics_expose_request_counts_latency_and_task_outcomes(client):
    client.get("/healthz")
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        clear_expired_sessions.delay().get()
    finally:
        celery_app.conf.task_always_eager = previous
    response = client.get("/metrics")
    text = response.content.decode()
    assert response.status_code == 200
    assert "django_http_requests_total_by_view_transport_method_total" in text
    assert "django_http_requests_latency_seconds_by_view_method_bucket" in text
    assert (
        'portal_celery_task_outcomes_total{outcome="success",'
        'task="portal.tasks.clear_expired_sessions"}' in text
    )
