"""Log lines say which request they belong to: the request id, the user and the tenant where
known, as one JSON object a line (LOG_FORMAT=json); the id follows the work a request queued
into a real Celery worker, into the task's log lines and the audit events it writes."""

import io
import json
import logging
import logging.config

import pytest
from django.conf import settings

from core.models import AuditEvent
from tests.support.fixtures_celery import wait_until
from tests.support.gunicorn_server import free_port, get, serve_portal, stop, wait_until_serving


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture
def json_log():
    """The console handler as LOG_FORMAT=json builds it, on the root logger, into a buffer."""
    configurator = logging.config.DictConfigurator(settings.LOGGING)
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(configurator.configure_formatter(dict(settings.LOGGING["formatters"]["json"])))
    handler.addFilter(configurator.configure_filter(dict(settings.LOGGING["filters"]["request_context"])))
    logging.getLogger().addHandler(handler)
    try:
        yield buffer
    finally:
        logging.getLogger().removeHandler(handler)


@pytest.mark.django_db
def test_a_log_line_names_the_request_the_user_and_the_tenant(
    client, tenant, tenant_viewer, json_log
):
    client.force_login(tenant_viewer)
    # A viewer may not launch: the 403 is logged once the page has read the tenant and user.
    response = client.get(f"/t/{tenant.slug}/workloads/new/", HTTP_X_REQUEST_ID="req-viewer-1")
    assert response.status_code == 403
    line = next(entry for entry in _json_lines(json_log.getvalue())
                if entry["logger"] == "django.request")
    assert line["level"] == "WARNING"
    assert line["request_id"] == "req-viewer-1"
    assert line["user"] == tenant_viewer.get_username()
    assert line["tenant"] == tenant.slug
    assert "Forbidden" in line["message"]


@pytest.mark.django_db
def test_outside_a_request_the_fields_are_empty(json_log):
    logging.getLogger("portal.test").warning("no request here")
    (line,) = _json_lines(json_log.getvalue())
    assert (line["request_id"], line["user"], line["tenant"]) == ("", "", "")


def test_a_task_queued_by_a_request_logs_and_audits_under_its_request_id(
    client, celery_worker, platform_admin, tenant
):
    worker = celery_worker(loglevel="INFO", LOG_FORMAT="json")
    applied = AuditEvent.objects.filter(action="tenant.applied", tenant_slug=tenant.slug)
    # A starting worker sweeps every tenant onto the cluster: that is not the request's work.
    wait_until(applied.exists, timeout=60)
    client.force_login(platform_admin)
    response = client.post(
        "/admin/tenants/tenant/",
        {"action": "reconcile_selected", "_selected_action": [tenant.pk]},
        HTTP_X_REQUEST_ID="req-reconcile-7",
    )
    assert response.status_code == 302
    # Written by the worker, for the request.
    wait_until(applied.filter(request_id="req-reconcile-7").exists, timeout=60)

    lines = _json_lines(worker.output())
    task_lines = [line for line in lines if "tenant_reconcile_task" in line["message"]]
    assert task_lines, lines
    done = [line["request_id"] for line in task_lines if "succeeded" in line["message"]]
    assert "req-reconcile-7" in done, task_lines
    # Lines of the worker outside that task carry no request id of another's.
    assert {line["request_id"] for line in lines} <= {"", "req-reconcile-7"}


@pytest.mark.django_db
def test_gunicorn_with_log_format_json_writes_one_json_object_a_line_on_stdout(tmp_path):
    port = free_port()
    server = serve_portal(port, workers=1, log=tmp_path / "access.log", LOG_FORMAT="json",
                          LOG_LEVEL="INFO")
    try:
        wait_until_serving(server, port)
        status, _, headers = get(port, "/no-such-page/", {"X-Request-ID": "req-gunicorn-404"})
        assert status == 404
        assert headers["X-Request-ID"] == "req-gunicorn-404"
    finally:
        output = stop(server)
    lines = [line for line in output.splitlines() if line.strip()]
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    not_found = [e for e in entries if e.get("request_id") == "req-gunicorn-404"]
    assert not_found and not_found[0]["level"] == "WARNING", output
    assert not_found[0]["logger"] == "django.request"


def test_production_logs_json_unless_told_otherwise_and_development_text():
    from tests.portal.test_settings import PRODUCTION_ENV, _manage

    code = "from django.conf import settings as s; print(s.LOG_FORMAT)"
    development = {"SECRET_KEY": PRODUCTION_ENV["SECRET_KEY"]}
    answers = [
        _manage("shell", "--no-imports", "-c", code, env=env).stdout.split()
        for env in (PRODUCTION_ENV, PRODUCTION_ENV | {"LOG_FORMAT": "text"}, development)
    ]
    assert answers == [["json"], ["text"], ["text"]]
    refused = _manage("check", env=development | {"LOG_FORMAT": "yaml"})
    assert refused.returncode != 0 and "LOG_FORMAT" in refused.stderr
