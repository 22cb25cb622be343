"""Local sign-in and sign-out; failed attempts are rate-limited with a clear message."""

import pytest
from axes.models import AccessAttempt
from django.urls import reverse

from tests.factories import TEST_PASSWORD


def test_sign_in_lands_on_the_role_page_and_sign_out_ends_the_session(client, tenant_owner):
    response = client.post(
        reverse("login"), {"username": "owner", "password": TEST_PASSWORD}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("tenants:dashboard", args=["acme"])
    response = client.post(reverse("logout"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("login")
    assert client.get("/api/v1/me/").status_code == 401


def test_wrong_password_gets_a_clear_message(client, tenant_owner):
    response = client.post(reverse("login"), {"username": "owner", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content
    assert "_auth_user_id" not in client.session


def test_repeated_failures_lock_the_account_out(client, tenant_owner, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post(reverse("login"), {"username": "owner", "password": "nope"})
    response = client.post(reverse("login"), {"username": "owner", "password": "nope"})
    assert response.status_code == 429
    assert b"Too many failed sign-in attempts" in response.content
    # The right password does not help while locked out.
    response = client.post(reverse("login"), {"username": "owner", "password": TEST_PASSWORD})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    assert AccessAttempt.objects.get(username="owner").failures_since_start >= 5


def test_logout_by_get_is_refused(client, tenant_owner):
    client.force_login(tenant_owner)
    assert client.get(reverse("logout")).status_code == 405


@pytest.mark.parametrize("path", ["/no-such-page/", "/t/acme/nope/"])
def test_unknown_urls_get_the_portals_404_page(client, tenant_owner, path):
    client.force_login(tenant_owner)
    response = client.get(path)
    assert response.status_code == 404
    assert b"Page not found" in response.content
    assert b"AI Factory" in response.content
