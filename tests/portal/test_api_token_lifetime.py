"""Personal API tokens have a capped lifetime (API_TOKEN_MAX_LIFETIME_DAYS) and show last use."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from core.models import ApiToken
from core.tokens import api_token_create

pytestmark = pytest.mark.django_db


def me(api_client, raw: str):
    return api_client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_a_token_without_an_expiry_gets_the_longest_allowed(settings, tenant_member):
    settings.API_TOKEN_MAX_LIFETIME_DAYS = 30

    token = api_token_create(user=tenant_member, name="ci").token

    assert timedelta(days=29, hours=23) < token.expires_at - timezone.now() <= timedelta(days=30)


def test_the_api_refuses_a_lifetime_beyond_the_cap_with_a_field_error(api_client, tenant_member):
    api_client.force_login(tenant_member)
    too_late = timezone.now() + timedelta(days=91)

    response = api_client.post(
        "/api/v1/tokens/", {"name": "ci", "expires_at": too_late.isoformat()}, format="json"
    )

    assert response.status_code == 400
    assert "at most 90 days" in str(response.json()["error"])
    assert "expires_at" in str(response.json()["error"])
    assert not ApiToken.objects.exists()


def test_the_page_offers_only_lifetimes_within_the_cap_and_refuses_others(login, tenant_member):
    client = login(tenant_member)
    page = client.get(reverse("api-tokens")).content.decode()
    assert 'value="90"' in page and 'value="365"' not in page and "Never" not in page

    response = client.post(reverse("api-tokens"), {"name": "ci", "expires_in_days": "365"})

    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_an_existing_token_past_the_cap_stops_working(api_client, settings, tenant_member):
    issued = api_token_create(user=tenant_member, name="old")
    # Made before the cap existed: no expiry, created 100 days ago.
    ApiToken.objects.filter(pk=issued.token.pk).update(
        expires_at=None, created_at=timezone.now() - timedelta(days=100)
    )
    assert me(api_client, issued.raw).status_code == 401

    settings.API_TOKEN_MAX_LIFETIME_DAYS = 120
    assert me(api_client, issued.raw).status_code == 200


def test_the_api_shows_the_expiry_that_applies_and_the_last_use(api_client, tenant_member):
    issued = api_token_create(user=tenant_member, name="ci")
    created = timezone.now() - timedelta(days=80)
    ApiToken.objects.filter(pk=issued.token.pk).update(
        created_at=created, expires_at=timezone.now() + timedelta(days=60)
    )
    assert me(api_client, issued.raw).status_code == 200

    body = api_client.get("/api/v1/tokens/", HTTP_AUTHORIZATION=f"Bearer {issued.raw}").json()
    row = (body["results"] if isinstance(body, dict) else body)[0]
    token = ApiToken.objects.get(pk=issued.token.pk)
    assert row["expires_at"].startswith((created + timedelta(days=90)).strftime("%Y-%m-%dT%H:%M"))
    assert row["last_used_at"] is not None and token.last_used_at is not None


def test_last_use_is_written_at_most_once_a_minute(api_client, tenant_member):
    issued = api_token_create(user=tenant_member, name="ci")
    assert me(api_client, issued.raw).status_code == 200
    first = ApiToken.objects.get(pk=issued.token.pk).last_used_at

    for _ in range(3):
        assert me(api_client, issued.raw).status_code == 200

    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at == first
    earlier = timezone.now() - timedelta(minutes=2)
    ApiToken.objects.filter(pk=issued.token.pk).update(last_used_at=earlier)
    me(api_client, issued.raw)
    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at > earlier


def test_the_token_page_shows_last_use_and_the_capped_expiry(login, tenant_member):
    issued = api_token_create(user=tenant_member, name="ci")
    ApiToken.objects.filter(pk=issued.token.pk).update(
        last_used_at=timezone.now() - timedelta(minutes=5)
    )

    html = login(tenant_member).get(reverse("api-tokens")).content.decode()

    assert "5\xa0minutes ago" in html
    assert issued.token.expires_at.strftime("%Y-%m-%d") in html
