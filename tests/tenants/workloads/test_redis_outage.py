"""Redis goes down for real (a redis-server of the test's own, killed by its process id): the
API and the pages go on. The cache fails open (the throttle lets requests through), a launch is
saved and answers 202 with the page's notice that its follow-up waits for the queue, and
/readyz stays 200, reporting what is degraded; only a database outage makes it 503."""

import pytest
from django.db import connection
from django.test import override_settings

from tenants.workloads.models import Workload, WorkloadStatus
from tests.support.fixtures_celery import celery_broker

from .conftest import INFERENCE_SPEC


@pytest.fixture
def redis_backed(own_redis):
    """Cache and broker on the test's own Redis, as in production (CACHE_URL=rediscache://)."""
    cache = {
        "BACKEND": "core.redis_cache.FailOpenRedisCache",
        "LOCATION": own_redis.url,
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1},
    }
    with override_settings(CACHES={"default": cache}), celery_broker(own_redis.url):
        yield own_redis


@pytest.mark.django_db(transaction=True)  # real commits: the follow-up is sent when they happen
def test_with_redis_killed_the_api_answers_and_a_launch_is_saved_with_the_queue_notice(
    api_client, tenant_member, gpu_pool, workload_quota, redis_backed
):
    import redis

    workload_quota()
    api_client.force_login(tenant_member)
    assert api_client.get("/api/v1/workloads/").status_code == 200
    # The throttle counted in Redis while it was up.
    assert redis.Redis.from_url(redis_backed.url).keys("*throttle_user*")

    redis_backed.kill()

    listed = api_client.get("/api/v1/workloads/")
    assert listed.status_code == 200, listed.content[:300]
    body = {"tenant": "acme", "kind": "inference", "name": "chat", "spec": INFERENCE_SPEC}
    launched = api_client.post("/api/v1/workloads/", body, format="json")
    assert launched.status_code == 202, launched.content[:500]
    assert "The task queue is unreachable" in launched.json()["notice"]
    workload = Workload.objects.get(pk=launched.json()["id"])
    assert workload.status == WorkloadStatus.PENDING
    page = api_client.get("/t/acme/workloads/")
    assert page.status_code == 200


@pytest.mark.django_db(transaction=True)
def test_without_the_broker_or_cache_readyz_stays_200_and_says_degraded(client, redis_backed):
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
        up = client.get("/readyz").json()
        redis_backed.kill()
        down = client.get("/readyz")

    assert up["status"] == "ok", up
    assert up["checks"]["cache"]["status"] == up["checks"]["broker"]["status"] == "ok"
    body = down.json()
    assert down.status_code == 200, body
    assert body["status"] == "degraded"
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["broker"]["status"] == "fail"
    assert body["checks"]["cache"]["status"] == "fail"
    assert "ConnectionError" in body["checks"]["cache"]["detail"]


@pytest.mark.django_db(transaction=True)
def test_without_the_database_readyz_is_503(client):
    saved = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = 1  # nothing listens there: the database is down
    try:
        response = client.get("/readyz")
    finally:
        connection.close()
        connection.settings_dict["PORT"] = saved
    body = response.json()
    assert response.status_code == 503, body
    assert body["status"] == "fail"
    assert body["checks"]["database"]["status"] == "fail"
