"""The Keycloak directory sync, end to end against the test provider's Admin REST API.

A user signs in and makes a personal API token; then they change in the provider (disabled,
deleted, a role or a group taken away) while not signing in again; the sync (management command
or Celery task) pulls the directory, and the token loses exactly that access. A directory that
cannot be read changes nothing; one read only in part (too slow for a run) changes nothing
either, and the next runs resume the read until it is complete.
"""

import time
from datetime import timedelta

import pytest
import requests
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone

from core.models import ApiToken, AuditEvent, OidcIdentity
from core.tokens import api_token_create
from tenants.identity.directory_sync import keycloak_directory_sync
from tenants.identity.tasks import DirectorySyncFailed, keycloak_directory_sync_task
from tenants.models import DirectoryRead, Membership, RoleAssignment, Source
from tests.factories import MembershipFactory, TenantFactory
from tests.support.oidc_provider import USERS, portal_sign_in

pytestmark = pytest.mark.django_db(transaction=True)

User = get_user_model()


@pytest.fixture
def tenants(transactional_db):
    return {slug: TenantFactory(slug=slug, name=slug.title()) for slug in ("acme", "globex")}


@pytest.fixture
def signed_in(keycloak, tenants, live_server):
    """`signed_in(username)`: sign in through the provider, return (user, raw API token)."""

    def _sign_in(username: str):
        with requests.Session() as http:
            portal_sign_in(http, live_server.url, username)
        user = OidcIdentity.objects.get(subject=USERS[username]["sub"]).user
        return user, api_token_create(user=user, name="ci").raw

    return _sign_in


def call(api_client, raw: str, path: str = "/api/v1/me/"):
    return api_client.get(path, HTTP_AUTHORIZATION=f"Bearer {raw}")


def memberships(user) -> dict[str, str]:
    return {m.tenant.slug: m.role for m in Membership.objects.filter(user=user)}


@pytest.mark.parametrize("change", ["disabled", "deleted"])
def test_a_user_disabled_or_deleted_in_keycloak_loses_their_tokens(
    keycloak, signed_in, api_client, change
):
    olga, raw = signed_in("olga")
    _, other_raw = signed_in("mark")
    assert call(api_client, raw).status_code == 200
    if change == "disabled":
        keycloak.update_user("olga", enabled=False)
    else:
        keycloak.delete_user("olga")

    call_command("sync_keycloak_directory")

    assert call(api_client, raw).status_code == 401
    olga.refresh_from_db()
    assert not olga.is_active
    assert not ApiToken.objects.filter(user=olga, revoked_at__isnull=True).exists()
    event = AuditEvent.objects.get(action="user.deactivate_from_keycloak")
    assert (event.object_id, event.changes["reason"]) == (str(olga.pk), change)
    assert AuditEvent.objects.filter(action="api_token.revoke", object_type__contains="token")
    # A deleted user's memberships from Keycloak go; a disabled one's stay (still in the group).
    assert memberships(olga) == ({} if change == "deleted" else {"acme": "owner"})
    # Everyone else is untouched.
    assert call(api_client, other_raw).status_code == 200


def test_a_role_stripped_in_keycloak_takes_the_access_away(keycloak, signed_in, api_client):
    pat, raw = signed_in("pat")  # platform-admin as a role of the portal's client
    fay, _ = signed_in("fay")  # finance as a realm role
    assert call(api_client, raw, "/api/v1/nodes/").status_code == 200
    keycloak.update_user("pat", client_roles={"account": ["manage-account"]})
    keycloak.update_user("fay", realm_roles=["default-roles-ai-factory"])

    keycloak_directory_sync_task.apply().get()

    assert call(api_client, raw, "/api/v1/nodes/").status_code == 403
    assert not RoleAssignment.objects.filter(user__in=[pat, fay]).exists()
    assert set(
        AuditEvent.objects.filter(action="role.revoke").values_list("changes__user", flat=True)
    ) == {pat.username, fay.username}
    assert pat.is_active and call(api_client, raw).status_code == 200


def test_group_changes_in_keycloak_change_memberships_and_leave_local_ones(
    keycloak, signed_in, api_client, tenants
):
    sam, raw = signed_in("sam")  # acme member, globex viewer
    olga, _ = signed_in("olga")  # acme owner
    initech = TenantFactory(slug="initech")
    MembershipFactory(user=sam, tenant=initech, role="viewer")  # granted in the portal
    assert call(api_client, raw, "/api/v1/tenants/globex/").status_code == 200
    keycloak.update_user("sam", groups=["/tenants/acme/owner"])
    keycloak.update_user("olga", groups=["/tenants/acme/member"])

    result = keycloak_directory_sync()

    assert result.ok and result.deactivated == []
    assert memberships(sam) == {"acme": "owner", "initech": "viewer"}
    assert Membership.objects.get(user=sam, tenant=initech).source == Source.LOCAL
    assert memberships(olga) == {"acme": "member"}
    assert call(api_client, raw, "/api/v1/tenants/globex/").status_code == 404
    assert AuditEvent.objects.filter(action="membership.remove").count() == 1


def test_a_directory_error_changes_nothing_and_the_next_run_catches_up(
    keycloak, signed_in, api_client
):
    olga, raw = signed_in("olga")
    keycloak.update_user("olga", enabled=False, groups=[])
    keycloak.fail_directory(status=503)

    with pytest.raises(CommandError, match="nothing changed"):
        call_command("sync_keycloak_directory")
    with pytest.raises(DirectorySyncFailed):
        keycloak_directory_sync_task.apply().get()

    olga.refresh_from_db()
    assert olga.is_active and memberships(olga) == {"acme": "owner"}
    assert call(api_client, raw).status_code == 200
    assert AuditEvent.objects.filter(action="keycloak.directory_sync_failed").count() == 2
    assert not AuditEvent.objects.filter(action="user.deactivate_from_keycloak").exists()

    keycloak.fail_directory(remaining=0)
    assert keycloak_directory_sync().deactivated == [olga.username]
    assert call(api_client, raw).status_code == 401


@pytest.mark.parametrize("where", ["early", "at the last read"])
def test_a_failure_half_way_through_the_reads_changes_nothing_and_the_next_run_resumes(
    keycloak, signed_in, api_client, where
):
    olga, raw = signed_in("olga")
    sam, _ = signed_in("sam")
    calls_before = keycloak.stats()["directory"]
    keycloak_directory_sync()
    reads = keycloak.stats()["directory"] - calls_before
    keycloak.update_user("olga", groups=[], enabled=False)
    keycloak.update_user("sam", groups=[])

    keycloak.fail_directory(status=500, remaining=1, after=2 if where == "early" else reads - 1)
    failed = keycloak_directory_sync()

    assert not failed.ok and "Keycloak answered 500" in failed.error
    assert "the next run resumes" in failed.error
    assert memberships(sam) == {"acme": "member", "globex": "viewer"}
    olga.refresh_from_db()
    assert olga.is_active and memberships(olga) == {"acme": "owner"}
    assert call(api_client, raw).status_code == 200

    calls_before = keycloak.stats()["directory"]
    result = keycloak_directory_sync()

    assert result.ok and result.runs == 2 and result.deactivated == [olga.username]
    assert keycloak.stats()["directory"] - calls_before < reads  # only what was missing
    assert memberships(sam) == {} and memberships(olga) == {}
    assert call(api_client, raw).status_code == 401


def test_every_linked_user_reported_gone_at_once_is_taken_for_a_misconfiguration(
    keycloak, signed_in, api_client
):
    olga, raw = signed_in("olga")
    mark, _ = signed_in("mark")
    keycloak.delete_user("olga")
    keycloak.delete_user("mark")

    result = keycloak_directory_sync()

    assert not result.ok and "404 for all 2" in result.error
    assert User.objects.filter(pk__in=[olga.pk, mark.pk], is_active=True).count() == 2
    assert call(api_client, raw).status_code == 200


def test_a_wrong_client_secret_is_a_recorded_failure(keycloak, signed_in, settings, api_client):
    olga, raw = signed_in("olga")
    keycloak.update_user("olga", enabled=False)
    settings.KEYCLOAK_DIRECTORY_CLIENT_SECRET = "wrong"

    result = keycloak_directory_sync()

    assert not result.ok
    olga.refresh_from_db()
    assert olga.is_active and call(api_client, raw).status_code == 200


def test_the_sync_is_a_no_op_without_the_admin_client(keycloak, signed_in, settings):
    olga, _ = signed_in("olga")
    keycloak.update_user("olga", enabled=False)
    settings.KEYCLOAK_DIRECTORY_CLIENT_ID = ""
    calls_before = keycloak.stats()["directory"]

    result = keycloak_directory_sync()

    assert not result.configured
    assert keycloak.stats()["directory"] == calls_before
    olga.refresh_from_db()
    assert olga.is_active


def test_the_sync_reads_by_group_and_user_and_follows_email_verification(keycloak, signed_in):
    olga, _ = signed_in("olga")
    for username in ("mark", "vera", "sam", "fay", "pat"):
        signed_in(username)
    keycloak.update_user("olga", email="olga@new.example", email_verified=False)
    calls_before = keycloak.stats()["directory"]

    keycloak_directory_sync()

    # 2 tenants x 3 roles x (group-by-path + members) + per linked user its status and its
    # role mappings: not one call per user per group.
    assert keycloak.stats()["directory"] - calls_before == 12 + 6 * 2
    olga.refresh_from_db()
    assert olga.email == "olga@new.example"
    assert OidcIdentity.objects.get(user=olga).email_verified is False


def test_beat_runs_the_sync_periodically():
    entry = django_settings.CELERY_BEAT_SCHEDULE["keycloak-directory-sync"]
    assert entry["task"] == "tenants.identity.tasks.keycloak_directory_sync_task"
    assert entry["schedule"] == float(django_settings.KEYCLOAK_DIRECTORY_SYNC_SECONDS) == 300.0
    # Its own time limit, shorter than the interval: two runs never overlap.
    assert keycloak_directory_sync_task.time_limit == 240 < entry["schedule"]
    assert not keycloak_directory_sync_task.acks_late


def test_groups_larger_than_a_page_are_read_whole(keycloak, tenants):
    # python-keycloak pages by 100: 130 members need two pages, and none may be dropped.
    users = []
    for n in range(130):
        sub = f"00000000-0000-4000-8000-{n:012d}"
        keycloak.add_user(
            f"bulk{n}",
            sub=sub,
            email=f"bulk{n}@acme.example",
            given_name="Bulk",
            family_name=str(n),
            groups=["/tenants/acme/member"],
        )
        user = User.objects.create_user(username=f"bulk{n}")
        OidcIdentity.objects.create(user=user, subject=sub, issuer=keycloak.issuer)
        users.append(user)
    MembershipFactory(
        user=users[-1], tenant=tenants["globex"], role="viewer", source=Source.KEYCLOAK
    )

    result = keycloak_directory_sync()

    assert result.ok and result.users == 130
    assert (
        Membership.objects.filter(
            tenant=tenants["acme"], role="member", source=Source.KEYCLOAK
        ).count()
        == 130
    )
    assert not Membership.objects.filter(tenant=tenants["globex"]).exists()


def test_the_realm_exports_roles_suffice_and_a_missing_one_is_named(
    keycloak, signed_in, api_client
):
    # The provider grants the service account what deploy/keycloak/realm-export.json grants.
    assert sorted(keycloak.directory_access()["roles"]) == ["query-groups", "view-users"]
    olga, raw = signed_in("olga")
    fay, _ = signed_in("fay")  # finance as a realm role
    keycloak.update_user("fay", realm_roles=[])
    keycloak.directory_access(roles=["query-groups"])  # view-users taken away
    keycloak.update_user("olga", enabled=False)

    refused = keycloak_directory_sync()

    assert not refused.ok
    assert "403" in refused.error and "view-users" in refused.error
    olga.refresh_from_db()
    assert olga.is_active and call(api_client, raw).status_code == 200
    assert RoleAssignment.objects.filter(user=fay).exists()

    keycloak.directory_access(roles=["view-users"])  # Keycloak's view-users alone is enough
    result = keycloak_directory_sync()

    assert result.ok and result.deactivated == [olga.username]
    assert not RoleAssignment.objects.filter(user=fay).exists()


def test_a_keycloak_answering_in_seconds_still_completes_the_sync_in_time(
    keycloak, signed_in, settings
):
    olga, _ = signed_in("olga")
    for username in ("mark", "vera", "sam", "fay", "pat"):
        signed_in(username)
    keycloak.update_user("olga", enabled=False)
    # 24 reads of a second each: one after the other they would take 24 s, past the budget.
    settings.KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT = 70  # reads get 10 s
    keycloak.directory_access(delay_ms=1000)

    started = time.monotonic()
    result = keycloak_directory_sync()

    assert result.ok, result.error
    assert time.monotonic() - started < 10
    assert result.deactivated == [olga.username]


def test_a_keycloak_too_slow_for_the_budget_changes_nothing_and_says_so(
    keycloak, signed_in, settings
):
    olga, _ = signed_in("olga")
    keycloak.update_user("olga", enabled=False, groups=[])
    settings.KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT = 70  # reads get 10 s
    settings.KEYCLOAK_DIRECTORY_CONCURRENCY = 1
    keycloak.directory_access(delay_ms=1500)  # 8 reads one at a time: 12 s

    result = keycloak_directory_sync()

    assert not result.ok and "answered too slowly" in result.error
    olga.refresh_from_db()
    assert olga.is_active and memberships(olga) == {"acme": "owner"}
    event = AuditEvent.objects.get(action="keycloak.directory_sync_failed")
    assert "too slowly" in event.changes["error"]


def test_a_call_past_its_timeout_is_named_as_such(keycloak, signed_in, settings):
    olga, _ = signed_in("olga")
    keycloak.update_user("olga", enabled=False)
    settings.OIDC_TIMEOUT = 1
    keycloak.directory_access(delay_ms=2500)

    result = keycloak_directory_sync()

    assert not result.ok and "did not answer within 1 s" in result.error
    olga.refresh_from_db()
    assert olga.is_active


def test_an_unreachable_keycloak_changes_nothing_and_is_reported(signed_in, keycloak, settings):
    olga, _ = signed_in("olga")
    keycloak.update_user("olga", enabled=False)
    issuer = settings.OIDC_ISSUER_URL
    settings.OIDC_ISSUER_URL = "http://127.0.0.1:1/realms/ai-factory"

    result = keycloak_directory_sync()

    assert not result.ok and "could not be reached" in result.error
    assert "Connection refused" in result.error
    olga.refresh_from_db()
    assert olga.is_active
    event = AuditEvent.objects.get(action="keycloak.directory_sync_failed")
    assert "could not be reached" in event.changes["error"]

    settings.OIDC_ISSUER_URL = issuer  # reachable again: the next run catches up
    assert keycloak_directory_sync().deactivated == [olga.username]


def access_state() -> dict:
    """Who may do what: each user's activity, memberships, platform roles and live tokens."""
    return {
        user.username: (
            user.is_active,
            sorted(
                Membership.objects.filter(user=user).values_list("tenant__slug", "role", "source")
            ),
            sorted(RoleAssignment.objects.filter(user=user).values_list("role", "source")),
            ApiToken.objects.filter(user=user, revoked_at__isnull=True).count(),
        )
        for user in User.objects.order_by("username")
    }


def test_a_keycloak_too_slow_for_one_run_completes_over_several_with_the_same_result(
    keycloak, signed_in, settings, api_client
):
    olga, olga_raw = signed_in("olga")
    mark, mark_raw = signed_in("mark")
    for username in ("sam", "fay"):
        signed_in(username)
    keycloak.update_user("olga", enabled=False)
    keycloak.delete_user("mark")
    keycloak.update_user("sam", groups=["/tenants/globex/owner"])
    keycloak.update_user("fay", realm_roles=[])
    before = access_state()
    with transaction.atomic():  # what one uninterrupted sync makes of it, then undone
        assert keycloak_directory_sync().runs == 1
        expected = access_state()
        transaction.set_rollback(True)
    assert access_state() == before != expected
    settings.KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT = 62  # each run reads for 2 s
    settings.KEYCLOAK_DIRECTORY_CONCURRENCY = 1
    keycloak.directory_access(delay_ms=300)  # 20 reads one at a time: 6 s

    results = [keycloak_directory_sync()]
    while not results[-1].ok and len(results) < 10:
        # Part of the directory changes nothing: who was deleted keeps access for now.
        assert "answered too slowly" in results[-1].error
        assert "the next run resumes this read" in results[-1].error
        assert access_state() == before
        assert call(api_client, mark_raw).status_code == 200
        results.append(keycloak_directory_sync())

    assert results[-1].ok and 2 < len(results) == results[-1].runs
    assert access_state() == expected
    assert sorted(results[-1].deactivated) == [mark.username, olga.username]
    assert call(api_client, mark_raw).status_code == 401
    assert call(api_client, olga_raw).status_code == 401


def test_a_read_begun_too_long_ago_starts_over(keycloak, signed_in, settings):
    olga, _ = signed_in("olga")
    keycloak.update_user("olga", enabled=False)
    settings.KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT = 62  # each run reads for 2 s
    settings.KEYCLOAK_DIRECTORY_CONCURRENCY = 1
    keycloak.directory_access(delay_ms=400)  # 14 reads one at a time: 5.6 s
    assert "answered too slowly" in keycloak_directory_sync().error
    age = timedelta(seconds=settings.KEYCLOAK_DIRECTORY_READ_MAX_AGE + 1)
    DirectoryRead.objects.update(started_at=timezone.now() - age)  # as if begun that long ago
    keycloak.directory_access(delay_ms=0)
    calls_before = keycloak.stats()["directory"]

    result = keycloak_directory_sync()

    assert result.ok and result.runs == 1 and result.deactivated == [olga.username]
    # All of it asked again: 2 tenants x 3 roles x (group-by-path + members) + olga's 2.
    assert keycloak.stats()["directory"] - calls_before == 12 + 2
