"""Signing in with Keycloak in headless Chromium, against a real OpenID Connect provider.

The same steps work against a real Keycloak: the provider's login page uses Keycloak's element
ids (#kc-form-login, #username, #password, #kc-login).
"""

import time

import pytest
from django.conf import settings as django_settings
from django.contrib.sessions.backends.db import SessionStore

from tests.factories import TenantFactory
from tests.support.fixtures_browser import screenshot, sign_out
from tests.support.oidc_provider import password_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tenants(transactional_db):
    return [TenantFactory(slug="acme", name="Acme Labs"), TenantFactory(slug="globex")]


def keycloak_sign_in(page, username: str) -> None:
    """From the portal's sign-in page, through Keycloak's login form, back to the portal."""
    page.goto("/accounts/login/")
    page.click("#sign-in-keycloak")
    page.wait_for_selector("#kc-form-login")
    page.fill("#username", username)
    page.fill("#password", password_of(username))
    page.click("#kc-login")


ROLES = [
    ("olga", "/t/acme/", "Olga Owner"),
    ("mark", "/t/acme/", "Mark Member"),
    ("vera", "/t/acme/", "Vera Viewer"),
    ("fay", "/billing/invoices/", "Fay Finance"),
    ("pat", "/fleet/", "Pat Platform"),
    ("nina", "/no-access/", "Nina Newcomer"),
]


@pytest.mark.parametrize(
    ("username", "landing", "full_name"),
    ROLES,
    ids=["owner", "member", "viewer", "finance", "platform-admin", "no-access"],
)
def test_each_role_signs_in_with_keycloak_and_lands_on_its_page(
    keycloak, tenants, live_server, page, username, landing, full_name
):
    keycloak_sign_in(page, username)

    page.wait_for_url(f"{live_server.url}{landing}")
    assert page.locator("#user-menu").inner_text().strip() == full_name
    if username == "nina":
        assert "Ask your tenant owner" in page.locator("#no-access").inner_text()
    screenshot(page, f"oidc-landing-{username}")


def test_with_local_accounts_off_the_sign_in_page_offers_only_keycloak(
    keycloak, tenants, live_server, page, settings
):
    settings.LOCAL_LOGIN_ENABLED = False

    page.goto("/accounts/login/")
    assert page.locator("#id_password").count() == 0
    assert page.locator("#sign-in-keycloak").is_visible()
    screenshot(page, "oidc-login-keycloak-only")

    keycloak_sign_in(page, "olga")
    page.wait_for_url(f"{live_server.url}/t/acme/")


def test_signing_out_ends_the_portal_and_the_keycloak_session(
    keycloak, tenants, live_server, page, signed_in_sessions
):
    keycloak_sign_in(page, "olga")
    page.wait_for_url(f"{live_server.url}/t/acme/")

    sign_out(page)
    page.wait_for_url(f"{live_server.url}/accounts/login/")

    assert signed_in_sessions() == []
    page.goto("/t/acme/")
    assert page.url.startswith(f"{live_server.url}/accounts/login/")
    # Keycloak asks for the password again: its session ended too.
    page.click("#sign-in-keycloak")
    page.wait_for_selector("#kc-form-login")
    assert page.url.startswith(keycloak.issuer)


def test_a_user_disabled_in_keycloak_loses_the_portal_at_the_next_refresh(
    keycloak, tenants, live_server, page, signed_in_sessions
):
    keycloak_sign_in(page, "mark")
    page.wait_for_url(f"{live_server.url}/t/acme/")
    assert signed_in_sessions() == ["mark"]

    keycloak.update_user("mark", enabled=False)
    # Time passes beyond OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS.
    cookie = next(
        c for c in page.context.cookies() if c["name"] == django_settings.SESSION_COOKIE_NAME
    )
    store = SessionStore(session_key=cookie["value"])
    store["oidc_id_token_expiration"] = time.time() - 1
    store.save()

    page.goto("/t/acme/quota/")

    page.wait_for_selector("#sign-in-failed[data-reason='session-ended']")
    assert "Your Keycloak session has ended" in page.content()
    assert signed_in_sessions() == []
    screenshot(page, "oidc-session-ended")
