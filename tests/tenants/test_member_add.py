"""Adding a member by e-mail: only an address Keycloak verified finds a user, never a guess."""

import pytest
from django.urls import reverse

from core.models import OidcIdentity
from tenants.models import Membership
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

ADDRESS = "kim@example.com"


def keycloak_user(username: str, *, verified: bool, email: str = ADDRESS):
    user = UserFactory(username=username, email=email)
    OidcIdentity.objects.create(
        user=user, subject=f"sub-{username}", issuer="https://sso", email_verified=verified
    )
    return user


def add(client, who: str):
    return client.post(
        reverse("tenants:member-list", args=["acme"]), {"user": who, "role": "member"}
    )


def test_the_verified_account_is_found_even_when_an_older_unverified_one_shares_the_address(
    login, tenant_owner, tenant
):
    keycloak_user("kim-old", verified=False)  # older: the one the portal used to pick
    verified = keycloak_user("kim", verified=True, email="KIM@example.com")

    assert add(login(tenant_owner), ADDRESS).status_code == 302

    assert list(Membership.objects.filter(tenant=tenant, role="member").values_list(
        "user__username", flat=True
    )) == [verified.username]


@pytest.mark.parametrize("kind", ["unverified keycloak account", "local account"])
def test_an_unverified_address_finds_nobody(login, tenant_owner, tenant, kind):
    if kind == "local account":
        UserFactory(username="kim", email=ADDRESS)
    else:
        keycloak_user("kim", verified=False)

    response = add(login(tenant_owner), ADDRESS)

    assert response.status_code == 200
    assert "No portal user with this username or verified e-mail" in response.content.decode()
    assert not Membership.objects.filter(user__username="kim").exists()


def test_an_address_verified_on_several_accounts_is_refused_as_ambiguous(
    login, tenant_owner, tenant
):
    keycloak_user("kim-a", verified=True)
    keycloak_user("kim-b", verified=True)

    response = add(login(tenant_owner), ADDRESS)

    assert "Several portal users have this verified e-mail" in response.content.decode()
    assert not Membership.objects.filter(user__username__startswith="kim").exists()


def test_the_api_answers_an_ambiguous_address_with_a_field_error(api_client, tenant_owner, tenant):
    keycloak_user("kim-a", verified=True)
    keycloak_user("kim-b", verified=True)
    api_client.force_login(tenant_owner)

    response = api_client.post(
        "/api/v1/tenants/acme/members/", {"user": ADDRESS, "role": "viewer"}, format="json"
    )

    assert response.status_code == 400
    assert "Several portal users" in str(response.json()["error"])
    assert not Membership.objects.filter(user__username__startswith="kim").exists()


def test_a_deactivated_account_does_not_make_the_address_ambiguous(login, tenant_owner, tenant):
    gone = keycloak_user("kim-gone", verified=True)
    gone.is_active = False
    gone.save()
    keycloak_user("kim", verified=True)

    assert add(login(tenant_owner), ADDRESS).status_code == 302
    assert Membership.objects.filter(user__username="kim", tenant=tenant).exists()
