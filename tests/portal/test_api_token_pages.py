"""The 'API tokens' page: list with last use, create (raw value shown once), revoke (POST+CSRF)."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from core.models import ApiToken, AuditEvent
from core.tokens import api_token_create
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import screenshot, sign_in

pytestmark = pytest.mark.django_db

PAGE = "/account/tokens/"


def test_the_user_menu_links_to_the_api_tokens_page(login, tenant_member):
    response = login(tenant_member).get(reverse("tenants:dashboard", args=["acme"]))

    assert b'id="menu-api-tokens"' in response.content
    assert reverse("api-tokens").encode() in response.content


def test_the_page_lists_only_my_tokens_with_their_last_use(
    login, tenant_member, other_tenant_member
):
    used = api_token_create(user=tenant_member, name="terraform").token
    ApiToken.objects.filter(pk=used.pk).update(last_used_at=timezone.now() - timedelta(hours=3))
    api_token_create(user=tenant_member, name="ci")
    api_token_create(user=other_tenant_member, name="outsider-script")

    response = login(tenant_member).get(PAGE)

    assert response.status_code == 200
    rows = {t.name: t for t in response.context["tokens"]}
    assert set(rows) == {"terraform", "ci"}
    html = response.content.decode()
    assert "3\xa0hours ago" in html
    assert "never" in html
    assert "outsider-script" not in html


def test_creating_a_token_shows_the_raw_value_once_and_audits(login, tenant_member):
    client = login(tenant_member)

    response = client.post(PAGE, {"name": "terraform", "expires_in_days": "90",
                                  "scopes": ["read", "billing:read"]})

    assert response.status_code == 200
    raw = response.context["issued"].raw
    assert raw.startswith("afp_") and raw in response.content.decode()
    assert response["Cache-Control"].startswith("max-age=0")
    token = ApiToken.objects.get(user=tenant_member, name="terraform")
    assert token.digest == ApiToken.digest_of(raw)
    assert timedelta(days=89) < token.expires_at - timezone.now() <= timedelta(days=90)
    assert token.scopes == ["read", "billing:read"]
    event = AuditEvent.objects.get(action="api_token.create", actor=tenant_member)
    assert event.changes["scopes"] == ["read", "billing:read"]
    # The list afterwards shows the token, never its raw value.
    again = client.get(PAGE).content.decode()
    assert "terraform" in again and raw not in again
    # And the token works.
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200


def test_a_duplicate_or_empty_name_is_refused_with_the_reason(login, tenant_member):
    client = login(tenant_member)
    api_token_create(user=tenant_member, name="ci")

    duplicate = client.post(PAGE, {"name": "ci", "expires_in_days": "", "scopes": ["read"]})
    empty = client.post(PAGE, {"name": "  ", "expires_in_days": "", "scopes": ["read"]})
    unscoped = client.post(PAGE, {"name": "no-scope", "expires_in_days": ""})

    assert duplicate.status_code == 400
    assert "You already have an active token with this name." in duplicate.content.decode()
    assert empty.status_code == 400
    assert unscoped.status_code == 400
    assert "Pick at least one scope." in unscoped.content.decode()
    assert ApiToken.objects.filter(user=tenant_member).count() == 1


def test_revoking_a_token_stops_it_and_audits(login, tenant_member):
    issued = api_token_create(user=tenant_member, name="ci")
    client = login(tenant_member)

    response = client.post(
        reverse("api-token-revoke", args=[issued.token.pk]), {"confirm": "ci"}, follow=True
    )

    assert response.redirect_chain[-1][0] == PAGE
    assert "Token “ci” revoked" in response.content.decode()
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None
    assert AuditEvent.objects.filter(action="api_token.revoke", actor=tenant_member).exists()
    api = Client()
    assert api.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {issued.raw}").status_code == 401


def test_creating_needs_a_csrf_token(tenant_member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(tenant_member, backend="django.contrib.auth.backends.ModelBackend")

    refused = client.post(PAGE, {"name": "forged", "expires_in_days": ""})

    assert refused.status_code == 403
    assert not ApiToken.objects.filter(user=tenant_member).exists()
    assert not AuditEvent.objects.filter(action="api_token.create").exists()
    csrf = client.get(PAGE).context["csrf_token"]
    created = client.post(PAGE, {"name": "ci", "expires_in_days": "", "scopes": ["admin"],
                                 "csrfmiddlewaretoken": csrf})
    assert created.status_code == 200
    assert ApiToken.objects.filter(user=tenant_member, name="ci").exists()


def test_revoking_needs_post_with_a_csrf_token(tenant_member):
    issued = api_token_create(user=tenant_member, name="ci")
    client = Client(enforce_csrf_checks=True)
    client.force_login(tenant_member, backend="django.contrib.auth.backends.ModelBackend")
    url = reverse("api-token-revoke", args=[issued.token.pk])

    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 403  # no CSRF token
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is None

    page = client.get(PAGE)
    csrf = page.context["csrf_token"]
    assert client.post(url, {"csrfmiddlewaretoken": csrf, "confirm": "ci"}).status_code == 302
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None


def test_another_users_token_cannot_be_revoked(login, tenant_member, other_tenant_member):
    theirs = api_token_create(user=other_tenant_member, name="ci").token

    response = login(tenant_member).post(reverse("api-token-revoke", args=[theirs.pk]))

    assert response.status_code == 404
    assert ApiToken.objects.get(pk=theirs.pk).revoked_at is None
    assert not AuditEvent.objects.filter(action="api_token.revoke").exists()


def test_the_page_needs_a_signed_in_user(client):
    response = client.get(PAGE)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("count", [1, 6])
def test_the_token_list_query_count_does_not_grow_with_tokens(
    login, tenant_member, django_assert_num_queries, count
):
    for n in range(count):
        api_token_create(user=tenant_member, name=f"token-{n}")
    client = login(tenant_member)
    client.get(PAGE)  # warm the per-session caches

    # Session, user, platform roles and memberships (navigation), tokens: the same for 1 or 6.
    with django_assert_num_queries(4):
        client.get(PAGE)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_the_browser_a_token_is_created_from_the_user_menu_shown_once_and_revoked(
    page, live_server, tenant_member
):
    sign_in(page, "member", TEST_PASSWORD)
    page.click("#user-menu")
    page.click("#menu-api-tokens")
    page.wait_for_url(f"{live_server.url}{PAGE}")

    page.fill("#id_name", "terraform")
    page.check("input[name=scopes][value='billing:read']")  # `read` is ticked already
    page.click("#create-token-submit")
    raw = page.input_value("#new-token-value")
    assert raw.startswith("afp_")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("#copy-token")
    page.wait_for_selector("#copy-token:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == raw
    screenshot(page, "api-tokens-created")
    token = ApiToken.objects.get(user=tenant_member, name="terraform")
    assert token.digest == ApiToken.digest_of(raw)
    assert token.scopes == ["read", "billing:read"]
    assert page.locator(f"#token-{token.pk} .token-scopes-shown .badge").all_inner_texts() == [
        "read", "billing:read"]

    page.goto(PAGE)
    assert page.locator("#new-token-value").count() == 0
    with page.expect_navigation():
        page.click(f"#revoke-{token.pk}")
    assert "“terraform”" in page.locator("#confirm-page h1").inner_text()  # asks, naming it
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None
    with page.expect_navigation():
        page.click("#confirm-submit")
    page.wait_for_selector(f"#token-{token.pk} .badge:has-text('revoked')")
    token.refresh_from_db()
    assert token.revoked_at is not None
