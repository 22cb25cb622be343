"""The sync service: Keycloak's grants replace Keycloak-sourced access; local grants stay."""

import pytest

from core.models import AuditEvent, OidcIdentity
from tenants.identity.claims import Grants
from tenants.identity.sync import keycloak_access_sync, keycloak_user_sync
from tenants.models import Membership, RoleAssignment, Source
from tests.factories import MembershipFactory, RoleAssignmentFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db

ISSUER = "https://sso.example.com/realms/ai-factory"
CLAIMS = {
    "sub": "9f1c2d3e-0000-4000-8000-000000000001",
    "preferred_username": "dana",
    "email": "dana@example.com",
    "given_name": "Dana",
    "family_name": "Doe",
}


def access_of(user) -> tuple[dict, set]:
    memberships = {m.tenant.slug: (m.role, m.source) for m in Membership.objects.filter(user=user)}
    roles = set(RoleAssignment.objects.filter(user=user).values_list("role", "source"))
    return memberships, roles


def test_first_sync_creates_the_user_and_links_the_subject(tenant):
    user = keycloak_user_sync(
        issuer=ISSUER, claims=CLAIMS, grants=Grants(memberships={"acme": "member"})
    )

    assert (user.username, user.email, user.get_full_name()) == (
        "dana",
        "dana@example.com",
        "Dana Doe",
    )
    assert not user.has_usable_password()
    assert OidcIdentity.objects.get(subject=CLAIMS["sub"]).user == user
    assert access_of(user) == ({"acme": ("member", Source.KEYCLOAK)}, set())


def test_the_user_is_matched_on_sub_and_follows_profile_changes(tenant):
    first = keycloak_user_sync(issuer=ISSUER, claims=CLAIMS, grants=Grants())
    renamed = CLAIMS | {"preferred_username": "dana.doe", "email": "dd@example.com"}

    again = keycloak_user_sync(issuer=ISSUER + "-moved", claims=renamed, grants=Grants())

    assert again == first
    again.refresh_from_db()
    assert (again.username, again.email) == ("dana.doe", "dd@example.com")
    assert OidcIdentity.objects.get(user=again).issuer == ISSUER + "-moved"
    update = AuditEvent.objects.get(action="user.update_from_keycloak")
    assert update.changes["username"] == ["dana", "dana.doe"]


def test_an_email_shared_with_a_local_account_does_not_link_to_it(tenant):
    local = UserFactory(username="dana-local", email=CLAIMS["email"])

    user = keycloak_user_sync(issuer=ISSUER, claims=CLAIMS, grants=Grants())

    assert user != local
    assert user.username == "dana"


def test_a_taken_username_gets_the_subject_as_suffix(tenant):
    UserFactory(username="Dana")

    user = keycloak_user_sync(issuer=ISSUER, claims=CLAIMS, grants=Grants())

    assert user.username == "dana-9f1c2d3e"


def test_every_taken_variant_is_skipped_until_a_free_name(tenant):
    for name in ("dana", "dana-9f1c2d3e", f"dana-{CLAIMS['sub']}"):
        UserFactory(username=name)

    user = keycloak_user_sync(issuer=ISSUER, claims=CLAIMS, grants=Grants())

    assert user.username == "dana-9f1c2d3e-2"


def test_unsafe_characters_in_the_username_are_replaced(tenant):
    claims = CLAIMS | {"preferred_username": "dana doe/ops"}

    assert keycloak_user_sync(issuer=ISSUER, claims=claims, grants=Grants()).username == (
        "dana-doe-ops"
    )


def test_sync_changes_and_removes_keycloak_access_and_leaves_local_access_alone(
    tenant, other_tenant
):
    user = UserFactory(username="dana")
    third = TenantFactory(slug="initech")
    MembershipFactory(user=user, tenant=tenant, role="member", source=Source.KEYCLOAK)
    MembershipFactory(user=user, tenant=other_tenant, role="viewer", source=Source.KEYCLOAK)
    MembershipFactory(user=user, tenant=third, role="viewer", source=Source.LOCAL)
    RoleAssignmentFactory(user=user, role="finance", source=Source.KEYCLOAK)
    RoleAssignmentFactory(user=user, role="platform_admin", source=Source.LOCAL)

    keycloak_access_sync(
        user=user,
        grants=Grants(
            roles=frozenset({"platform_admin"}),
            memberships={"acme": "owner", "initech": "owner", "nowhere": "owner"},
        ),
    )

    assert access_of(user) == (
        {"acme": ("owner", Source.KEYCLOAK), "initech": ("viewer", Source.LOCAL)},
        {("platform_admin", Source.LOCAL)},
    )
    assert sorted(AuditEvent.objects.values_list("action", flat=True)) == [
        "membership.remove",
        "membership.set",
        "role.revoke",
    ]


def test_a_sync_with_nothing_changed_writes_nothing(tenant, django_assert_num_queries):
    user = UserFactory(username="dana")
    grants = Grants(roles=frozenset({"finance"}), memberships={"acme": "viewer"})
    keycloak_access_sync(user=user, grants=grants)
    events = AuditEvent.objects.count()

    # Three reads (tenants, memberships, roles) inside a savepoint and its release: no writes.
    with django_assert_num_queries(5):
        keycloak_access_sync(user=user, grants=grants)

    assert AuditEvent.objects.count() == events
