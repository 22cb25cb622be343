"""A Keycloak client's client-credentials tokens act as the service account that names the
client, with that account's scopes: tokens from the test OpenID Connect provider, as a CI
system gets them."""

import jwt
import pytest
from django.contrib.auth import get_user_model

from core.models import AuditEvent, OidcIdentity
from tenants.access import service_accounts
from tenants.models import Membership, RoleAssignment, ServiceAccount
from tests.factories import MembershipFactory, RoleAssignmentFactory, UserFactory
from tests.support.oidc_provider import (
    CI_CLIENT_ID,
    DIRECTORY_CLIENT_ID,
    DIRECTORY_CLIENT_SECRET,
    client_credentials_token,
)
from tests.tenants.bearer.calls import me

pytestmark = pytest.mark.django_db(transaction=True)

User = get_user_model()


@pytest.fixture
def platform_admin(transactional_db):
    return RoleAssignmentFactory(user=UserFactory(username="platform-admin"),
                                 role=RoleAssignment.Role.PLATFORM_ADMIN).user


@pytest.fixture
def ci_account(acme, platform_admin):
    """acme's CI account, its owner's; a platform admin links the portal-ci client to it."""
    owner = MembershipFactory(tenant=acme, role=Membership.Role.OWNER,
                              user=UserFactory(username="owner")).user
    account = service_accounts.service_account_create(
        actor=owner, tenant=acme, name="ci", role="member", scopes=["read"],
    )
    return service_accounts.service_account_update(
        actor=platform_admin, account=account, keycloak_client_id=CI_CLIENT_ID,
        change_client_id=True,
    )


def test_a_client_credentials_token_acts_as_the_service_account(keycloak, ci_account, client):
    token = client_credentials_token(keycloak)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["azp"] == CI_CLIENT_ID
    assert claims["preferred_username"] == f"service-account-{CI_CLIENT_ID}"
    users_before = User.objects.count()

    response = me(client, token)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["username"] == "sa.acme.ci"
    assert [(t["slug"], t["role"]) for t in body["tenants"]] == [("acme", "member")]
    # No Keycloak identity, no new user, no platform role: the account is not a person.
    assert User.objects.count() == users_before
    assert not OidcIdentity.objects.filter(user=ci_account.user).exists()
    assert not RoleAssignment.objects.filter(user=ci_account.user).exists()
    assert ServiceAccount.objects.get(pk=ci_account.pk).keycloak_last_used_at is not None


def test_the_service_accounts_scopes_bind_its_keycloak_tokens(keycloak, ci_account, client):
    token = client_credentials_token(keycloak)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    launch = client.post("/api/v1/workloads/", {}, format="json", **auth)

    assert launch.status_code == 403
    assert launch.json()["error"] == {
        "status": 403, "code": "missing_scope",
        "message": 'This token lacks the "workloads" scope.',
    }
    owner = User.objects.get(username="owner")
    service_accounts.service_account_update(actor=owner, account=ci_account,
                                            scopes=["workloads"])
    again = client.post("/api/v1/workloads/", {}, format="json", **auth)
    # Past the scope: the launch's own refusal (no tenant named), not the scope's.
    assert again.status_code in (400, 404)
    assert again.json()["error"]["code"] != "missing_scope"


def test_a_disabled_service_account_refuses_its_keycloak_tokens(keycloak, ci_account, client):
    token = client_credentials_token(keycloak)
    owner = User.objects.get(username="owner")
    service_accounts.service_account_set_disabled(actor=owner, account=ci_account, disabled=True)

    assert me(client, token).status_code == 401
    assert AuditEvent.objects.filter(action="service_account.disable").exists()


def test_a_client_no_service_account_names_is_refused_not_made_a_person(
    keycloak, ci_account, client
):
    token = client_credentials_token(keycloak, client_id=DIRECTORY_CLIENT_ID,
                                     secret=DIRECTORY_CLIENT_SECRET)
    users_before = User.objects.count()

    response = me(client, token)

    assert response.status_code == 401, response.content
    assert response.json()["error"]["code"] == "authentication_failed"
    assert User.objects.count() == users_before
    assert not OidcIdentity.objects.exists()


def test_a_deleted_service_accounts_keycloak_tokens_stop_working(keycloak, ci_account, client):
    token = client_credentials_token(keycloak)
    assert me(client, token).status_code == 200
    owner = User.objects.get(username="owner")
    service_accounts.service_account_delete(actor=owner, account=ci_account)
    users_before = User.objects.count()

    response = me(client, token)

    # As the delete confirmation promises: 401, and no person "service-account-portal-ci".
    assert response.status_code == 401, response.content
    assert User.objects.count() == users_before
    assert not User.objects.filter(username__icontains="service-account").exists()
    assert not OidcIdentity.objects.exists()


# A user id, not the client's: only the other claims can tell the token is the client's own.
SOME_SUB = "6d1c0e2a-52f4-4a8e-9d0b-3f7f1b1c2a11"


@pytest.mark.parametrize("claims", [
    # Keycloak before 26: the client in `clientId`, no `azp`.
    {"azp": None, "client_id": None, "clientId": CI_CLIENT_ID, "sub": SOME_SUB},
    # Keycloak 26: the client in `client_id`.
    {"azp": None, "client_id": CI_CLIENT_ID, "sub": SOME_SUB},
    # `azp` alone.
    {"client_id": None, "sub": SOME_SUB},
], ids=["clientId", "client_id", "azp"])
def test_each_keycloak_versions_client_claim_names_the_service_account(
    keycloak, ci_account, client, claims
):
    token = keycloak.resign(client_credentials_token(keycloak), claims=claims)
    users_before = User.objects.count()

    response = me(client, token)

    assert response.status_code == 200, response.content
    assert response.json()["username"] == "sa.acme.ci"
    assert User.objects.count() == users_before


def test_a_client_id_with_capitals_matches_keycloaks_lowercased_user(
    keycloak, ci_account, platform_admin, client
):
    # Keycloak keeps the client id's case in `azp` but lowercases its service-account user.
    service_accounts.service_account_update(actor=platform_admin, account=ci_account,
                                            keycloak_client_id="Portal-CI",
                                            change_client_id=True)
    token = keycloak.resign(client_credentials_token(keycloak), claims={
        "azp": "Portal-CI", "client_id": "Portal-CI", "sub": SOME_SUB})
    assert jwt.decode(token, options={"verify_signature": False})["preferred_username"] == (
        "service-account-portal-ci")
    users_before = User.objects.count()

    response = me(client, token)

    assert response.status_code == 200, response.content
    assert response.json()["username"] == "sa.acme.ci"
    assert User.objects.count() == users_before


def test_a_service_account_token_naming_no_client_is_refused(keycloak, ci_account, client):
    token = keycloak.resign(client_credentials_token(keycloak), claims={
        "azp": None, "client_id": None, "sub": SOME_SUB})
    users_before = User.objects.count()

    response = me(client, token)

    assert response.status_code == 401, response.content
    assert User.objects.count() == users_before
