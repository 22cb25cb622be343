"""The sign-in pages around Keycloak that need no provider: the button, local accounts switched
off, the failure page, and settings that refuse a half-configured realm."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from tenants.identity.views import FAILURES
from tests.factories import TEST_PASSWORD

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
ISSUER = "https://sso.example.com/realms/ai-factory"


@pytest.fixture
def keycloak_configured(settings):
    settings.OIDC_ISSUER_URL = ISSUER
    settings.OIDC_RP_CLIENT_ID = "portal"
    settings.OIDC_RP_CLIENT_SECRET = "secret"
    return settings


def test_the_sign_in_page_offers_keycloak_when_a_realm_is_configured(client, keycloak_configured):
    html = client.get(reverse("login") + "?next=/t/acme/").content.decode()

    assert 'id="sign-in-keycloak"' in html
    assert 'href="/oidc/authenticate/?next=/t/acme/"' in html
    assert 'id="id_password"' in html  # local accounts are still on


def test_without_a_realm_there_is_no_keycloak_button_and_no_oidc_endpoint(client, settings):
    settings.OIDC_ISSUER_URL = ""

    assert b"sign-in-keycloak" not in client.get(reverse("login")).content
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404


def test_with_local_accounts_off_the_password_form_is_gone_and_refused(
    client, keycloak_configured, tenant_owner
):
    keycloak_configured.LOCAL_LOGIN_ENABLED = False

    page = client.get(reverse("login")).content.decode()
    response = client.post(reverse("login"), {"username": "owner", "password": TEST_PASSWORD})

    assert 'id="sign-in-keycloak"' in page
    assert 'id="id_password"' not in page
    assert response.status_code == 403
    assert "Password sign-in is turned off" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_with_local_accounts_off_the_admin_login_sends_people_to_the_portal_sign_in(
    client, keycloak_configured, tenant_owner
):
    keycloak_configured.LOCAL_LOGIN_ENABLED = False

    response = client.post(
        "/admin/login/?next=/admin/", {"username": "owner", "password": TEST_PASSWORD}
    )

    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/admin/"
    assert "_auth_user_id" not in client.session
    client.force_login(tenant_owner)
    assert client.get("/admin/login/").status_code == 403


def test_signing_out_of_a_local_session_does_not_go_to_keycloak(
    client, keycloak_configured, tenant_owner
):
    client.post(reverse("login"), {"username": "owner", "password": TEST_PASSWORD})

    response = client.post(reverse("logout"))

    assert response.status_code == 302
    assert response["Location"] == reverse("login")
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("reason", sorted(FAILURES))
def test_every_failure_reason_has_a_page_that_says_what_happened(client, reason):
    response = client.get(reverse("oidc-failed"), {"reason": reason})

    failure = FAILURES[reason]
    assert response.status_code == failure.status
    html = response.content.decode()
    assert failure.title in html
    assert f'data-reason="{reason}"' in html


def test_an_unknown_failure_reason_is_not_echoed(client):
    response = client.get(reverse("oidc-failed"), {"reason": "<script>alert(1)</script>"})

    assert response.status_code == 400
    assert "Sign-in failed" in response.content.decode()
    assert "<script>alert" not in response.content.decode()


def _check(env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OIDC_")}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OIDC_ISSUER_URL": ISSUER, "OIDC_RP_CLIENT_ID": "portal"}, "OIDC_RP_CLIENT_SECRET"),
        (
            {"OIDC_OP_TOKEN_ENDPOINT": f"{ISSUER}/protocol/openid-connect/token"},
            "OIDC_ISSUER_URL is required",
        ),
    ],
    ids=["no-client-secret", "endpoints-without-issuer"],
)
def test_a_half_configured_realm_refuses_to_start(env, message):
    result = _check(env)

    assert result.returncode != 0
    assert message in result.stderr
