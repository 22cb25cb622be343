"""Personal API tokens carry scopes: chosen at creation in the API (field errors for unknown
ones), shown in lists, audited; tokens made before scopes existed keep every right ("admin")."""

import pytest
from django.contrib.auth import get_user_model

from core.models import ApiToken, AuditEvent
from core.tokens import api_token_create
from tests.support.migrations import migrate_to, migrate_to_latest


@pytest.mark.django_db
def test_the_api_creates_a_scoped_token_and_lists_its_scopes(api_client, tenant_member):
    api_client.force_login(tenant_member)

    created = api_client.post("/api/v1/tokens/", {"name": "ci", "scopes": ["billing:read",
                                                                           "read"]},
                              format="json")
    defaulted = api_client.post("/api/v1/tokens/", {"name": "old-script"}, format="json")

    assert created.status_code == 201
    assert created.json()["scopes"] == ["read", "billing:read"]
    assert defaulted.json()["scopes"] == ["admin"]
    listed = {t["name"]: t["scopes"] for t in api_client.get("/api/v1/tokens/").json()["results"]}
    assert listed == {"ci": ["read", "billing:read"], "old-script": ["admin"]}
    event = AuditEvent.objects.filter(action="api_token.create").earliest("id")
    assert event.changes["scopes"] == ["read", "billing:read"]


@pytest.mark.django_db
@pytest.mark.parametrize("scopes", [[], ["root"], "read", [["read"]]])
def test_bad_scopes_are_a_field_error(api_client, tenant_member, scopes):
    api_client.force_login(tenant_member)

    response = api_client.post("/api/v1/tokens/", {"name": "ci", "scopes": scopes},
                               format="json")

    assert response.status_code == 400
    assert "scopes" in response.json()["error"]["fields"]
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
def test_a_read_token_reads_but_does_not_write(api_client, tenant_owner, tenant):
    token = api_token_create(user=tenant_owner, name="ro", scopes=["read"]).raw
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    assert api_client.get("/api/v1/tenants/acme/", **auth).status_code == 200
    spend = api_client.get("/api/v1/billing/spend/?tenant=acme", **auth)
    assert spend.status_code == 403
    assert spend.json()["error"]["message"] == 'This token lacks the "billing:read" scope.'
    # A browser session is not scope-limited: the role decides.
    api_client.force_login(tenant_owner)
    assert api_client.get("/api/v1/billing/spend/?tenant=acme").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_tokens_made_before_scopes_keep_every_right():
    apps = migrate_to([("portal", "0007_simulated_clusters")])
    try:
        user = get_user_model().objects.create(username="scripter")
        apps.get_model("portal", "ApiToken").objects.create(
            user_id=user.pk, name="ci", digest="d" * 64, hint="afp_dddd")
    finally:
        migrate_to_latest()

    assert ApiToken.objects.get(name="ci").scopes == ["admin"]
