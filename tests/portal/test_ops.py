"""Operations endpoints: /healthz, /readyz (database, broker, cache), /metrics."""

import pytest
from django.test import override_settings

from core.tasks import clear_expired_sessions
from portal.celery import app as celery_app


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
def test_readyz_is_200_degraded_with_the_failing_check_named_when_the_broker_is_down(client):
    with override_settings(
        CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL="redis://127.0.0.1:1/0"
    ):
        response = client.get("/readyz")
    body = response.json()
    # The pod still serves (writes wait for the queue): it stays in its Service.
    assert response.status_code == 200
    assert body["status"] == "degraded"
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


OUTSIDE = "203.0.113.9"  # a documentation address: nobody in METRICS_ALLOWED_NETWORKS


@pytest.mark.django_db
def test_readyz_shows_only_its_status_to_anonymous_callers(client, redis_url):
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=redis_url):
        response = client.get("/readyz", REMOTE_ADDR=OUTSIDE)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_keeps_what_failed_from_anonymous_callers_but_says_it_failed(client):
    with override_settings(
        CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL="redis://127.0.0.1:1/0"
    ):
        response = client.get("/readyz", REMOTE_ADDR=OUTSIDE)
    assert response.status_code == 200
    assert response.json() == {"status": "degraded"}
    assert b"127.0.0.1" not in response.content


@pytest.mark.django_db
def test_readyz_shows_its_checks_to_a_platform_admin_and_to_the_scraper(
    client, platform_admin, tenant_member
):
    with override_settings(METRICS_BEARER_TOKEN="scrape-me"):
        client.force_login(tenant_member)
        assert "checks" not in client.get("/readyz", REMOTE_ADDR=OUTSIDE).json()
        client.force_login(platform_admin)
        assert "database" in client.get("/readyz", REMOTE_ADDR=OUTSIDE).json()["checks"]
        client.logout()
        scraper = client.get(
            "/readyz", REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION="Bearer scrape-me"
        ).json()
        assert "database" in scraper["checks"]


@pytest.mark.django_db
def test_metrics_refuse_callers_without_the_token_or_an_allowed_address(client):
    with override_settings(METRICS_BEARER_TOKEN="scrape-me"):
        nobody = client.get("/metrics", REMOTE_ADDR=OUTSIDE)
        wrong = client.get("/metrics", REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION="Bearer nope")
        right = client.get("/metrics", REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION="Bearer scrape-me")
    assert nobody.status_code == wrong.status_code == 403
    assert b"django_http_requests" not in nobody.content + wrong.content
    assert nobody["WWW-Authenticate"].startswith("Bearer")
    assert right.status_code == 200
    assert b"django_http_requests_total_by_view_transport_method_total" in right.content


@pytest.mark.django_db
def test_metrics_answer_a_scraper_in_the_allowed_networks_only(client):
    with override_settings(METRICS_ALLOWED_NETWORKS=["10.0.0.0/8"], METRICS_BEARER_TOKEN=""):
        inside = client.get("/metrics", REMOTE_ADDR="10.1.2.3")
        outside = client.get("/metrics", REMOTE_ADDR=OUTSIDE)
        # A forwarded address is the proxy's word, not the peer: it never opens the door.
        forwarded = client.get("/metrics", REMOTE_ADDR=OUTSIDE, HTTP_X_FORWARDED_FOR="10.1.2.3")
    assert inside.status_code == 200
    assert outside.status_code == forwarded.status_code == 403


@pytest.mark.django_db
def test_where_https_is_required_the_metrics_token_counts_only_over_https(client):
    production = {"SECURE_SSL_REDIRECT": True, "SECURE_REDIRECT_EXEMPT": [r"^metrics$"]}
    with override_settings(
        **production, METRICS_BEARER_TOKEN="scrape-me", METRICS_ALLOWED_NETWORKS=[]
    ):
        plain = client.get("/metrics", REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION="Bearer scrape-me")
        secure = client.get(
            "/metrics", REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION="Bearer scrape-me", secure=True
        )
    assert plain.status_code == 403
    assert b"over HTTPS" in plain.content
    assert secure.status_code == 200


def test_production_caches_on_redis_failing_open():
    from .test_settings import PRODUCTION_ENV, _manage

    code = "from django.conf import settings as s; print(s.CACHES['default']['BACKEND'])"
    result = _manage("shell", "--no-imports", "-c", code, env=PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "core.redis_cache.FailOpenRedisCache"


def test_production_opens_metrics_to_nobody_until_configured():
    from .test_settings import PRODUCTION_ENV, _manage

    code = (
        "from django.conf import settings as s;"
        "print(s.METRICS_ALLOWED_NETWORKS, s.METRICS_BEARER_TOKEN == '', s.SECURE_SSL_REDIRECT)"
    )
    result = _manage("shell", "--no-imports", "-c", code, env=PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "True", "True"]
