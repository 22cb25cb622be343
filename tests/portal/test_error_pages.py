"""Errors in the portal's look for pages, and the API's one JSON error format, DEBUG on or off."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.test import Client

RAISING_URLS = "tests.portal.urls_raising"


@pytest.fixture
def lenient_client() -> Client:
    """A client that returns the 500 response instead of re-raising the view's exception."""
    return Client(raise_request_exception=False)


def _is_json_error(response, status: int) -> bool:
    body = response.json()
    return (
        response.status_code == status
        and response["Content-Type"] == "application/json"
        and body["error"]["status"] == status
        and isinstance(body["error"]["code"], str)
        and isinstance(body["error"]["message"], str)
    )


@pytest.mark.django_db
def test_a_page_that_raises_shows_the_portals_500_page_with_a_reference(
    lenient_client, settings
):
    settings.ROOT_URLCONF = RAISING_URLS
    settings.DEBUG = False
    response = lenient_client.get("/boom/", HTTP_X_REQUEST_ID="req-500-page")

    page = response.content.decode()
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
    assert 'id="error-page"' in page and "AI Factory" in page
    assert "Something went wrong on our side" in page
    assert "req-500-page" in page  # the reference support looks up in the logs
    assert "Traceback" not in page and "boom" not in page


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_an_api_view_that_raises_answers_a_json_500(lenient_client, settings, debug):
    settings.ROOT_URLCONF = RAISING_URLS
    settings.DEBUG = debug
    response = lenient_client.get("/api/v1/boom/")

    assert _is_json_error(response, 500)
    assert response.json()["error"]["code"] == "server_error"
    assert "boom" not in response.content.decode()


@pytest.mark.django_db
def test_a_plain_view_under_api_that_raises_answers_a_json_500(lenient_client, settings):
    settings.ROOT_URLCONF = RAISING_URLS
    settings.DEBUG = False
    response = lenient_client.get("/api/v1/plain-boom/")

    assert _is_json_error(response, 500)


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
@pytest.mark.parametrize("path", ["/api/v1/nope/", "/api/nope", "/api/v2/tenants/"])
def test_unknown_api_urls_are_json_404_even_in_debug(api_client, settings, debug, path):
    settings.DEBUG = debug
    response = api_client.get(path)

    assert _is_json_error(response, 404)


@pytest.mark.django_db
def test_an_api_url_without_its_slash_redirects_like_django_does(api_client, tenant_member):
    api_client.force_login(tenant_member)
    response = api_client.get("/api/v1/me?x=1")

    assert response.status_code == 301
    assert response["Location"] == "/api/v1/me/?x=1"


@pytest.mark.django_db
def test_a_bad_host_header_gets_a_400_page_or_a_json_400(settings):
    settings.DEBUG = False
    client = Client(HTTP_HOST="evil.example.com")

    page = client.get("/accounts/login/")
    api = client.get("/api/v1/me/")

    assert page.status_code == 400
    assert b'id="error-page"' in page.content and b"Bad request" in page.content
    assert _is_json_error(api, 400)


@pytest.mark.django_db
def test_a_form_posted_without_its_csrf_token_gets_the_portals_403_page(tenant_owner):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "owner", "password": "x"})

    assert response.status_code == 403
    page = response.content.decode()
    assert 'id="error-page"' in page and "AI Factory" in page
    assert "This form has expired" in page


@pytest.mark.django_db
def test_a_session_api_write_without_csrf_is_a_json_403(tenant_member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(tenant_member)
    response = client.post("/api/v1/tokens/", {"name": "ci"}, content_type="application/json")

    assert _is_json_error(response, 403)
    assert "CSRF" in response.json()["error"]["message"]


@pytest.mark.django_db
def test_a_page_outside_the_role_is_the_portals_403_page(client, tenant_member):
    client.force_login(tenant_member)
    response = client.get("/fleet/")

    assert response.status_code == 403
    assert b'id="error-page"' in response.content and b"Not allowed" in response.content


def test_the_demo_server_shows_the_portals_404_and_still_serves_static_files(
    tmp_path, unused_tcp_port
):
    """`make demo` as a newcomer runs it (no DEBUG set): the portal's 404, never Django's
    technical one with its URL patterns, and the stylesheets still load (WhiteNoise)."""
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items()
           if k not in {"DEBUG", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"}}
    env |= {"DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
            "SECRET_KEY": "demo-secret-key-for-the-error-page-test"}
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{unused_tcp_port}"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{unused_tcp_port}"

    def get(path: str) -> tuple[int, str]:
        response = requests.get(base + path, timeout=5)
        return response.status_code, response.text

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status, css = get("/static/css/portal.css")
                break
            except (requests.ConnectionError, requests.Timeout):  # not up, or still starting
                assert time.monotonic() < deadline, "the demo server did not start"
                time.sleep(0.3)
        status_404, page = get("/no-such-page/")
    finally:
        server.terminate()
        server.wait(timeout=10)

    assert status == 200 and ".error-code" in css
    assert status_404 == 404
    assert 'id="error-page"' in page and "Page not found" in page
    assert "URLconf" not in page and "portal.urls" not in page


@pytest.mark.django_db
def test_a_refused_page_is_logged_as_one_line_without_a_traceback(login, tenant_member, caplog):
    import logging

    from django.conf import settings as django_settings

    caplog.set_level(logging.WARNING, logger="django.request")
    response = login(tenant_member).get("/fleet/nodes/")

    assert response.status_code == 403
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    formatter = logging.Formatter(django_settings.LOGGING["formatters"]["plain"]["format"])
    line = formatter.format(record)
    assert "Forbidden" in line and "/fleet/nodes/" in line
    assert "\n" not in line and "Traceback" not in line


@pytest.mark.django_db
def test_every_page_names_the_portals_favicon_which_is_served(client, login, tenant_member):
    from django.contrib.staticfiles import finders

    page = login(tenant_member).get("/", follow=True).content.decode()
    login_page = Client().get("/accounts/login/").content.decode()

    for html in (page, login_page):
        assert '<link rel="icon" type="image/svg+xml" href="/static/favicon.svg">' in html
    path = finders.find("favicon.svg")
    assert path and Path(path).read_text().startswith("<svg")
    # Where no page names it (a JSON answer), browsers ask for /favicon.ico: the same icon.
    assert Client().get("/favicon.ico")["Location"] == "/static/favicon.svg"
