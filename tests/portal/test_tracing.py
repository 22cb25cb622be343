"""Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; with it, the portal under real
gunicorn sends a request's span and its SQL's spans, one trace, to the collector over OTLP/HTTP
(a receiver the test runs on 127.0.0.1)."""

import pytest
from django.conf import settings
from opentelemetry import trace

from core.tracing import configure_tracing
from portal.celery import app as celery_app
from tests.support.fixtures_celery import wait_until
from tests.support.gunicorn_server import free_port, get, serve_portal, stop, wait_until_serving
from tests.support.otlp_receiver import OtlpReceiver

SERVER, CLIENT = 2, 3  # OTLP's SpanKind values


def test_nothing_is_set_up_without_an_endpoint():
    assert settings.OTEL_EXPORTER_OTLP_ENDPOINT == ""
    assert configure_tracing() is False
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
    assert not any("opentelemetry" in name for name in settings.MIDDLEWARE)


@pytest.mark.django_db(transaction=True)
def test_a_request_and_its_sql_arrive_at_the_collector_as_one_trace(
    client, platform_admin, tmp_path
):
    client.force_login(platform_admin)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    port = free_port()
    with OtlpReceiver() as receiver:
        server = serve_portal(
            port, workers=1, log=tmp_path / "access.log", SECRET_KEY=settings.SECRET_KEY,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_SERVICE_NAME="portal-under-test",
            OTEL_BSP_SCHEDULE_DELAY="200",
        )
        try:
            wait_until_serving(server, port)
            status, _, headers = get(port, "/dashboard/",
                                     {"Cookie": f"{settings.SESSION_COOKIE_NAME}={session}"})
            assert status in (200, 302) and "login" not in headers.get("Location", ""), headers

            page = wait_until(lambda: next(
                (s for s in receiver.spans if s.kind == SERVER and "dashboard" in s.name), None
            ), timeout=30)

            def sql_of_the_request() -> str:
                return " ".join(
                    span.attributes.get("db.statement", "") for span in receiver.spans
                    if span.kind == CLIENT and span.trace_id == page.trace_id
                )

            # The session read, inside the request's trace.
            wait_until(lambda: "django_session" in sql_of_the_request(), timeout=30)
        finally:
            stop(server)
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    assert page.service == "portal-under-test"
    # The probes are not traced.
    assert not any("healthz" in s.name for s in receiver.spans)


def test_a_task_run_by_a_real_worker_and_its_sql_arrive_as_one_trace(celery_worker):
    with OtlpReceiver() as receiver:
        celery_worker(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_BSP_SCHEDULE_DELAY="200")
        celery_app.send_task("portal.tasks.clear_expired_sessions")
        run = wait_until(lambda: next(
            (s for s in receiver.spans if s.name == "run/portal.tasks.clear_expired_sessions"), None
        ), timeout=60)
        wait_until(lambda: any(
            s.trace_id == run.trace_id and "django_session" in s.attributes.get("db.statement", "")
            for s in receiver.spans
        ), timeout=30)
    assert run.service == "ai-factory-portal"
