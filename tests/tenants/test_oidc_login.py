"""Signing in with Keycloak over plain HTTP, against a real OpenID Connect provider.

The provider (tests/oidc_provider) issues Keycloak-shaped tokens; the portal is the live server.
Every rejected sign-in must land on a page that says what happened, with no portal session.
"""

import time
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore

from core.models import AuditEvent, OidcIdentity
from tenants.models import Membership, RoleAssignment, Source
from tests.factories import MembershipFactory, RoleAssignmentFactory, TenantFactory, UserFactory
from tests.support.fixtures_oidc import configure_portal_for
from tests.support.oidc_provider import USERS, follow, portal_sign_in, start_provider

pytestmark = pytest.mark.django_db(transaction=True)

User = get_user_model()


@pytest.fixture
def tenants(transactional_db):
    return {
        slug: TenantFactory(slug=slug, name=slug.title()) for slug in ("acme", "globex", "initech")
    }


@pytest.fixture
def http():
    with requests.Session() as session:
        yield session


def keycloak_memberships(username: str) -> dict[str, tuple[str, str]]:
    return {
        m.tenant.slug: (m.role, m.source)
        for m in Membership.objects.filter(user__username=username).select_related("tenant")
    }


def failure_reason(response: requests.Response) -> str:
    assert "/accounts/login/failed/" in response.url, response.url
    return parse_qs(urlparse(response.url).query)["reason"][0]


def test_first_sign_in_creates_the_user_matched_on_sub_and_lands_on_the_tenant(
    keycloak, tenants, live_server, http, signed_in_sessions
):
    page = portal_sign_in(http, live_server.url, "olga")

    assert page.status_code == 200
    assert page.url == f"{live_server.url}/t/acme/"
    olga = User.objects.get(username="olga")
    assert (olga.email, olga.first_name, olga.last_name) == ("olga@acme.example", "Olga", "Owner")
    assert not olga.has_usable_password()
    identity = OidcIdentity.objects.get(user=olga)
    assert identity.subject == USERS["olga"]["sub"]
    assert identity.issuer == keycloak.issuer
    assert keycloak_memberships("olga") == {"acme": ("owner", Source.KEYCLOAK)}
    assert signed_in_sessions() == ["olga"]
    assert AuditEvent.objects.filter(action="user.create_from_keycloak").count() == 1

    # A second sign-in finds the same user by sub.
    with requests.Session() as again:
        portal_sign_in(again, live_server.url, "olga")
    assert User.objects.filter(email="olga@acme.example").count() == 1


def test_a_local_account_with_the_same_name_is_never_taken_over(
    keycloak, tenants, live_server, http
):
    local = UserFactory(username="olga", email="olga@acme.example")

    portal_sign_in(http, live_server.url, "olga")

    identity = OidcIdentity.objects.select_related("user").get(subject=USERS["olga"]["sub"])
    assert identity.user != local
    assert identity.user.username == f"olga-{USERS['olga']['sub'][:8]}"
    assert not Membership.objects.filter(user=local).exists()


def test_sign_in_succeeds_when_the_name_and_its_first_variant_are_both_taken(
    keycloak, tenants, live_server, http, signed_in_sessions
):
    sub = USERS["olga"]["sub"]
    UserFactory(username="OLGA")
    UserFactory(username=f"olga-{sub[:8]}")

    page = portal_sign_in(http, live_server.url, "olga")

    assert page.status_code == 200
    identity = OidcIdentity.objects.select_related("user").get(subject=sub)
    assert identity.user.username == f"olga-{sub}"
    assert identity.email_verified is True
    assert keycloak_memberships(identity.user.username) == {"acme": ("owner", Source.KEYCLOAK)}
    assert signed_in_sessions() == [identity.user.username]


def test_an_unverified_email_is_recorded_as_such_at_sign_in(keycloak, tenants, live_server, http):
    keycloak.update_user("mark", email_verified=False)

    portal_sign_in(http, live_server.url, "mark")

    assert OidcIdentity.objects.get(subject=USERS["mark"]["sub"]).email_verified is False


def test_memberships_follow_keycloak_groups_between_sign_ins(
    keycloak, tenants, live_server, signed_in_sessions
):
    # sam: member of acme and viewer of globex in Keycloak; viewer of initech granted locally.
    with requests.Session() as http:
        portal_sign_in(http, live_server.url, "sam")
    sam = User.objects.get(username="sam")
    MembershipFactory(user=sam, tenant=tenants["initech"], role="viewer")
    assert keycloak_memberships("sam") == {
        "acme": ("member", Source.KEYCLOAK),
        "globex": ("viewer", Source.KEYCLOAK),
        "initech": ("viewer", Source.LOCAL),
    }

    # Changed and removed in Keycloak; a Keycloak group for initech does not override the
    # local grant; a group for a tenant the portal does not know is ignored.
    keycloak.update_user(
        "sam",
        groups=["/tenants/acme/owner", "/tenants/initech/member", "/tenants/umbrella/owner"],
    )
    with requests.Session() as http:
        portal_sign_in(http, live_server.url, "sam")
    assert keycloak_memberships("sam") == {
        "acme": ("owner", Source.KEYCLOAK),
        "initech": ("viewer", Source.LOCAL),
    }

    # Added again, and every Keycloak group gone at the next sign-in.
    keycloak.update_user("sam", groups=["/tenants/globex/member"])
    with requests.Session() as http:
        portal_sign_in(http, live_server.url, "sam")
    assert keycloak_memberships("sam") == {
        "globex": ("member", Source.KEYCLOAK),
        "initech": ("viewer", Source.LOCAL),
    }
    keycloak.update_user("sam", groups=[])
    with requests.Session() as http:
        page = portal_sign_in(http, live_server.url, "sam")
    assert keycloak_memberships("sam") == {"initech": ("viewer", Source.LOCAL)}
    assert page.url == f"{live_server.url}/t/initech/"

    actions = list(
        AuditEvent.objects.filter(action__startswith="membership.")
        .order_by("created_at", "id")
        .values_list("action", "changes__role", "changes__source", "actor")
    )
    # Every change the sync made is audited as the system's, from Keycloak; the local grant
    # (made with a factory, not a service) left no event and was never touched.
    assert actions == [
        ("membership.set", [None, "member"], "keycloak", None),
        ("membership.set", [None, "viewer"], "keycloak", None),
        ("membership.set", ["member", "owner"], "keycloak", None),
        ("membership.remove", "viewer", "keycloak", None),
        ("membership.set", [None, "member"], "keycloak", None),
        ("membership.remove", "owner", "keycloak", None),
        ("membership.remove", "member", "keycloak", None),
    ]


def test_a_user_disabled_in_the_portal_cannot_sign_in_through_keycloak(
    keycloak, tenants, live_server, signed_in_sessions
):
    with requests.Session() as earlier:
        portal_sign_in(earlier, live_server.url, "olga")
        User.objects.filter(username="olga").update(is_active=False)

        with requests.Session() as http:
            page = portal_sign_in(http, live_server.url, "olga")

        assert failure_reason(page) == "account-disabled"
        assert "Your portal account is disabled" in page.text
        assert signed_in_sessions() == ["olga"]  # the earlier one; the attempt made none
        # ...and the earlier session is dead too: an inactive user has no session.
        assert earlier.get(f"{live_server.url}/api/v1/me/").status_code in {401, 403}


def test_platform_roles_follow_realm_and_client_roles(keycloak, tenants, live_server):
    # pat is platform admin through a role of the portal's client; fay is finance by realm role.
    with requests.Session() as http:
        assert portal_sign_in(http, live_server.url, "pat").url == f"{live_server.url}/fleet/"
    with requests.Session() as http:
        page = portal_sign_in(http, live_server.url, "fay")
        assert page.url == f"{live_server.url}/billing/invoices/"
    pat = User.objects.get(username="pat")
    RoleAssignmentFactory(user=pat, role=RoleAssignment.Role.FINANCE)  # granted in the portal
    assert set(pat.platform_roles.values_list("role", "source")) == {
        ("platform_admin", Source.KEYCLOAK),
        ("finance", Source.LOCAL),
    }

    keycloak.update_user("pat", client_roles={"portal": []})
    with requests.Session() as http:
        page = portal_sign_in(http, live_server.url, "pat")
    assert set(pat.platform_roles.values_list("role", "source")) == {("finance", Source.LOCAL)}
    assert page.url == f"{live_server.url}/billing/invoices/"

    # Both changes made by the sync are in the audit log, by the system, from Keycloak.
    events = AuditEvent.objects.filter(action__startswith="role.", changes__user="pat")
    assert list(events.order_by("id").values_list("action", "actor", "changes__source")) == [
        ("role.grant", None, Source.KEYCLOAK),
        ("role.revoke", None, Source.KEYCLOAK),
    ]


def test_a_user_with_no_role_and_no_membership_sees_the_no_access_page(
    keycloak, tenants, live_server, http
):
    page = portal_sign_in(http, live_server.url, "nina")

    assert page.url == f"{live_server.url}/no-access/"
    assert "No access yet" in page.text
    assert "Ask your tenant owner" in page.text


# Times are offsets from the moment of the sign-in, taken when the test runs.
@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        ({"claims": {"exp": -600, "iat": -900}}, "token-expired"),
        ({"claims": {"iat": 600, "nbf": 600}}, "token-not-yet-valid"),
        ({"claims": {"aud": "some-other-app"}}, "token-audience"),
        ({"claims": {"iss": "http://127.0.0.1:9/realms/evil"}}, "token-issuer"),
        ({"corrupt_signature": True}, "token-signature"),
        ({"claims": {"nonce": "from-another-sign-in"}}, "token-nonce"),
    ],
    ids=[
        "expired",
        "issued-in-the-future",
        "wrong-audience",
        "unknown-issuer",
        "tampered-signature",
        "wrong-nonce",
    ],
)
def test_an_id_token_that_fails_validation_is_rejected_with_a_clear_page_and_no_session(
    keycloak, tenants, live_server, http, signed_in_sessions, tamper, reason
):
    now = int(time.time())
    claims = {
        key: now + value if key in {"exp", "iat", "nbf"} else value
        for key, value in tamper.get("claims", {}).items()
    }
    keycloak.tamper_next_id_token("olga", **(tamper | {"claims": claims}))

    page = portal_sign_in(http, live_server.url, "olga")

    assert failure_reason(page) == reason
    assert page.status_code == 403
    assert "The sign-in could not be verified" in page.text
    assert signed_in_sessions() == []
    assert not User.objects.filter(username="olga").exists()
    assert http.get(f"{live_server.url}/api/v1/me/").status_code in {401, 403}


def test_a_provider_clock_slightly_ahead_is_tolerated(keycloak, tenants, live_server, http):
    # Keycloak's clock 10 s ahead: within OIDC_CLOCK_LEEWAY, the sign-in goes through.
    ahead = int(time.time()) + 10
    keycloak.tamper_next_id_token("olga", claims={"iat": ahead, "nbf": ahead})

    page = portal_sign_in(http, live_server.url, "olga")

    assert page.url == f"{live_server.url}/t/acme/"


def test_a_callback_with_a_state_this_browser_never_started_is_rejected(
    keycloak, tenants, live_server, http, signed_in_sessions
):
    redirect = portal_sign_in(http, live_server.url, "olga", stop_at_callback=True)
    callback = urlparse(redirect.headers["Location"])
    params = {key: values[0] for key, values in parse_qs(callback.query).items()}
    params["state"] = "forged-state"

    page = http.get(f"{live_server.url}/oidc/callback/?{urlencode(params)}")

    assert failure_reason(page) == "state"
    assert page.status_code == 400
    assert "This sign-in has expired" in page.text
    assert signed_in_sessions() == []


def test_a_replayed_authorization_code_is_refused(
    keycloak, tenants, live_server, signed_in_sessions
):
    with requests.Session() as victim:
        redirect = portal_sign_in(victim, live_server.url, "olga", stop_at_callback=True)
        code = parse_qs(urlparse(redirect.headers["Location"]).query)["code"][0]
        follow(victim, redirect)  # the victim's sign-in uses the code
        assert signed_in_sessions() == ["olga"]

        # The same callback again in the victim's browser: its state is spent.
        page = victim.get(redirect.headers["Location"])
        assert failure_reason(page) == "state"

    with requests.Session() as attacker:
        # An attacker with a state of their own replays the code: Keycloak refuses it.
        start = attacker.get(f"{live_server.url}/oidc/authenticate/", allow_redirects=False)
        state = parse_qs(urlparse(start.headers["Location"]).query)["state"][0]
        query = urlencode({"code": code, "state": state, "iss": keycloak.issuer})
        page = attacker.get(f"{live_server.url}/oidc/callback/?{query}")
        assert failure_reason(page) == "code"
        assert "Keycloak did not accept the sign-in" in page.text
    assert signed_in_sessions() == ["olga"]  # only the victim's own session


def test_a_wrong_client_secret_is_refused_by_keycloak_with_a_clear_page(
    keycloak, tenants, live_server, http, signed_in_sessions, settings
):
    settings.OIDC_RP_CLIENT_SECRET = "not-the-secret"

    page = portal_sign_in(http, live_server.url, "olga")

    assert failure_reason(page) == "provider-refused"
    assert "Keycloak refused the sign-in" in page.text
    assert signed_in_sessions() == []


def test_provider_down_before_sign_in_is_a_friendly_page_not_a_500(
    settings, tenants, live_server, http, signed_in_sessions, unused_tcp_port
):
    configure_portal_for(settings, f"http://127.0.0.1:{unused_tcp_port}/realms/ai-factory")

    page = http.get(f"{live_server.url}/oidc/authenticate/")

    assert failure_reason(page) == "provider-down"
    assert page.status_code == 503
    assert "Keycloak is unavailable" in page.text
    assert signed_in_sessions() == []


def test_provider_down_during_the_callback_is_a_friendly_page_not_a_500(
    settings, tenants, live_server, http, signed_in_sessions
):
    provider = start_provider(portal_urls=[live_server.url])
    try:
        configure_portal_for(settings, provider.issuer)
        redirect = portal_sign_in(http, live_server.url, "olga", stop_at_callback=True)
    finally:
        provider.stop()

    page = follow(http, redirect)

    assert failure_reason(page) == "provider-down"
    assert page.status_code == 503
    assert signed_in_sessions() == []


def test_discovery_is_fetched_once_and_cached(keycloak, tenants, live_server):
    for _ in range(3):
        with requests.Session() as http:
            portal_sign_in(http, live_server.url, "mark")

    stats = keycloak.stats()
    assert stats["discovery"] == 1
    assert stats["token"] == 3


def test_explicit_endpoints_need_no_discovery(keycloak, tenants, live_server, http, settings):
    oidc = f"{keycloak.issuer}/protocol/openid-connect"
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{oidc}/auth"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{oidc}/token"
    settings.OIDC_OP_USER_ENDPOINT = f"{oidc}/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{oidc}/certs"

    page = portal_sign_in(http, live_server.url, "mark")

    assert page.url == f"{live_server.url}/t/acme/"
    assert keycloak.stats()["discovery"] == 0


def _expire_id_token(http: requests.Session) -> None:
    """Let the ID token's renewal time pass (as OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS would)."""
    store = SessionStore(session_key=http.cookies["sessionid"])
    store["oidc_id_token_expiration"] = time.time() - 1
    store.save()


def test_session_refresh_is_silent_while_the_keycloak_session_lives(
    keycloak, tenants, live_server, http, signed_in_sessions
):
    portal_sign_in(http, live_server.url, "mark")
    _expire_id_token(http)

    page = http.get(f"{live_server.url}/t/acme/quota/")

    assert page.url == f"{live_server.url}/t/acme/quota/"
    assert [r.status_code for r in page.history][:1] == [302]  # via Keycloak, prompt=none
    assert "prompt=none" in page.history[0].headers["Location"]
    assert signed_in_sessions() == ["mark"]
    store = SessionStore(session_key=http.cookies["sessionid"])
    assert store["oidc_id_token_expiration"] > time.time()


def test_session_refresh_asks_htmx_requests_for_a_full_reload(
    keycloak, tenants, live_server, http, signed_in_sessions
):
    portal_sign_in(http, live_server.url, "mark")
    _expire_id_token(http)

    partial = http.get(
        f"{live_server.url}/t/acme/", headers={"HX-Request": "true"}, allow_redirects=False
    )

    # Not a cross-origin redirect htmx could not follow: the page reloads, then refreshes.
    assert partial.status_code == 204
    assert partial.headers["HX-Refresh"] == "true"
    assert signed_in_sessions() == ["mark"]
    assert http.get(f"{live_server.url}/t/acme/").url == f"{live_server.url}/t/acme/"


def test_session_refresh_after_the_user_is_disabled_in_keycloak_ends_the_portal_session(
    keycloak, tenants, live_server, http, signed_in_sessions
):
    portal_sign_in(http, live_server.url, "mark")
    keycloak.update_user("mark", enabled=False)
    _expire_id_token(http)

    page = http.get(f"{live_server.url}/t/acme/")

    assert failure_reason(page) == "session-ended"
    assert "Your Keycloak session has ended" in page.text
    assert signed_in_sessions() == []
    assert http.get(f"{live_server.url}/t/acme/").url.startswith(
        f"{live_server.url}/accounts/login/"
    )


def test_session_refresh_picks_up_group_changes(keycloak, tenants, live_server, http):
    portal_sign_in(http, live_server.url, "mark")
    keycloak.update_user("mark", groups=["/tenants/globex/owner"])
    _expire_id_token(http)

    page = http.get(f"{live_server.url}/dashboard/")

    assert page.url == f"{live_server.url}/t/globex/"
    assert keycloak_memberships("mark") == {"globex": ("owner", Source.KEYCLOAK)}
