"""The REST API skeleton: authentication, one JSON error format, OpenAPI."""

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import ApiToken


def _token_for(user, **fields) -> str:
    fields.setdefault("scopes", ["admin"])
    raw = ApiToken.generate()
    ApiToken.objects.create(
        user=user, name="ci", digest=ApiToken.digest_of(raw), hint=raw[:8], **fields
    )
    return raw


def test_me_shows_the_user_roles_and_tenants_over_a_session(api_client, tenant_owner, tenant):
    api_client.force_login(tenant_owner)
    response = api_client.get("/api/v1/me/")
    assert response.status_code == 200
    body = response.json()
    assert body["username"] == "owner"
    assert body["roles"] == []
    assert body["tenants"] == [
        {
            "slug": "acme",
            "name": "Acme Labs",
            "isolation": "shared",
            "role": "owner",
            "source": "local",
        }
    ]


def test_me_lists_platform_roles(api_client, platform_admin):
    api_client.force_login(platform_admin)
    assert api_client.get("/api/v1/me/").json()["roles"] == ["platform_admin"]


def test_personal_api_token_authenticates_and_records_last_use(api_client, tenant_member):
    raw = _token_for(tenant_member)
    response = api_client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 200
    assert response.json()["username"] == "member"
    assert ApiToken.objects.get(user=tenant_member).last_used_at is not None


@pytest.mark.parametrize(
    "fields",
    [{"revoked_at": timezone.now()}, {"expires_at": timezone.now() - timedelta(minutes=1)}],
    ids=["revoked", "expired"],
)
def test_revoked_or_expired_token_is_refused_with_json_401(api_client, tenant_member, fields):
    raw = _token_for(tenant_member, **fields)
    response = api_client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"
    assert response["WWW-Authenticate"] == "Bearer"


def test_unknown_token_is_401(api_client, db):
    response = api_client.get("/api/v1/me/", HTTP_AUTHORIZATION="Bearer afp_nope")
    assert response.status_code == 401


def test_anonymous_gets_json_401_not_a_login_page(api_client, db):
    response = api_client.get("/api/v1/me/")
    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": {
            "status": 401,
            "code": "not_authenticated",
            "message": "Authentication credentials were not provided.",
        }
    }


def test_the_api_root_is_an_index_of_its_endpoints(api_client, tenant_member):
    api_client.force_login(tenant_member)
    response = api_client.get("/api/v1/")

    assert response.status_code == 200
    body = response.json()
    endpoints = body["endpoints"]
    for key in ("nodes", "workloads", "quota-requests", "billing/invoices", "tokens", "me"):
        assert endpoints[key] == f"http://testserver/api/v1/{key}/"
    assert all("{" not in url and "<" not in url for url in endpoints.values())
    assert body["schema"] == "http://testserver/api/schema/"
    # Every endpoint it names answers (a list, or the endpoint itself): none is a 404.
    for key in ("workloads", "billing/rates", "quota-requests", "me"):
        assert api_client.get(endpoints[key]).status_code == 200, key
    assert api_client.logout() is None
    assert api_client.get("/api/v1/").status_code == 401


def test_unknown_api_url_is_json_404(api_client, tenant_member):
    api_client.force_login(tenant_member)
    response = api_client.get("/api/v1/does-not-exist/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_malformed_json_is_a_json_400(api_client, tenant_member):
    api_client.force_login(tenant_member)
    response = api_client.generic(
        "POST", "/api/v1/tokens/", "{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "ci", "expires_at": "yesterday"}, "expires_at"),
        ({"name": "ci", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
    ],
)
def test_bad_token_fields_are_field_errors(api_client, tenant_member, payload, field):
    api_client.force_login(tenant_member)
    response = api_client.post("/api/v1/tokens/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert not ApiToken.objects.exists()


def test_token_lifecycle_is_audited_and_revocation_takes_effect(api_client, tenant_member):
    from core.models import AuditEvent

    api_client.force_login(tenant_member)
    created = api_client.post("/api/v1/tokens/", {"name": "terraform"}, format="json")
    assert created.status_code == 201
    raw = created.json()["token"]
    assert raw.startswith("afp_")
    assert "token" not in api_client.get("/api/v1/tokens/").json()["results"][0]
    api_client.logout()
    assert api_client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    api_client.force_login(tenant_member)
    assert api_client.delete(f"/api/v1/tokens/{created.json()['id']}/").status_code == 204
    api_client.logout()
    assert api_client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401
    actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["api_token.create", "api_token.revoke"]


def test_another_users_token_is_404_and_stays_active(api_client, tenant_member, tenant_owner):
    raw = _token_for(tenant_owner)
    token = ApiToken.objects.get(user=tenant_owner)
    api_client.force_login(tenant_member)
    assert api_client.delete(f"/api/v1/tokens/{token.pk}/").status_code == 404
    api_client.logout()
    assert api_client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200


def test_openapi_schema_and_swagger_ui_are_served(client, db):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert "/api/v1/me/" in schema.json()["paths"]
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"swagger-ui" in docs.content
    assert b"cdn.jsdelivr" not in docs.content
