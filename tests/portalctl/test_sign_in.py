"""Signing in against portals and identity providers that answer oddly (stand-in HTTP servers on
127.0.0.1): stored credentials go only to their own portal; the device grant's answers are
told apart by their `error` code; plain http is refused but for this machine; a redirect is
named; an unusable answer is an error message, never a traceback; logout always forgets."""

import json

import pytest

from portalctl import auth
from portalctl.config import Credentials
from portalctl.exits import CliError, Exit

ME = {"id": 1, "username": "ann", "name": "Ann", "email": "ann@example.com", "roles": [],
      "tenants": []}


@pytest.fixture
def folder(cli_home):
    return cli_home / "config" / "portalctl"


def test_stored_credentials_are_not_sent_to_another_portal(scripted, portalctl, folder):
    mine, other = scripted(), scripted()
    mine.answer("GET", "/api/v1/me/", ME)
    other.answer("GET", "/api/v1/me/", ME)
    assert portalctl("login", "--server", mine.url, "--token", "afp_mine").code == 0
    assert json.loads((folder / "credentials.json").read_text())["server"] == mine.url

    elsewhere = portalctl("whoami", server=other.url)

    assert elsewhere.code == 4
    assert f"Signed in to {mine.url}, not {other.url}: run portalctl login" in elsewhere.stderr
    assert other.seen == []
    assert portalctl("whoami").code == 0
    assert mine.seen[-1].headers["Authorization"] == "Bearer afp_mine"


def test_credentials_kept_before_servers_were_recorded_belong_to_the_stored_server(
    scripted, portalctl, folder
):
    mine, other = scripted(), scripted()
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"server": mine.url}))
    (folder / "credentials.json").write_text(json.dumps({"access_token": "afp_old"}))

    assert portalctl("whoami", server=other.url).code == 4
    assert other.seen == []


def test_login_to_another_portal_drops_the_old_ones_issuer_client_and_tenant(
    scripted, portalctl, folder
):
    mine, other = scripted(), scripted()
    other.answer("GET", "/api/v1/me/", ME)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "server": mine.url, "issuer": "https://sso.example.com/realms/mine",
        "client_id": "mine-cli", "tenant": "acme"}))

    assert portalctl("login", "--server", other.url, "--token", "afp_other").code == 0

    config = json.loads((folder / "config.json").read_text())
    assert config == {"server": other.url, "issuer": "", "client_id": "portal-cli", "tenant": ""}


def test_login_again_to_the_same_portal_keeps_its_tenant(scripted, portalctl, folder):
    mine = scripted()
    mine.answer("GET", "/api/v1/me/", ME)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"server": mine.url, "tenant": "acme"}))

    assert portalctl("login", "--server", mine.url, "--token", "afp_mine").code == 0

    assert json.loads((folder / "config.json").read_text())["tenant"] == "acme"


def test_plain_http_is_refused_except_to_this_machine(portalctl):
    refused = portalctl("login", "--server", "http://portal.example.com", "--token", "afp_x")
    assert refused.code == 2 and "plain HTTP" in refused.stderr
    by_environment = portalctl("whoami", token="afp_x", server="http://portal.example.com")
    assert by_environment.code == 2 and "plain HTTP" in by_environment.stderr
    assert portalctl("whoami", token="afp_x", server="ftp://portal.example.com").code == 2
    # Loopback is allowed (nothing listens there: unreachable, not refused).
    assert portalctl("whoami", token="afp_x", server="http://[::1]:9").code == 8
    assert portalctl("whoami", token="afp_x", server="http://localhost:9").code == 8


def test_a_redirect_is_named_not_followed(scripted, portalctl):
    portal = scripted()
    moved = "https://portal.example.com/api/v1/me/"
    portal.answer("GET", "/api/v1/me/", (301, b"", {"Location": moved}))
    portal.answer("GET", "/.well-known/portalctl.json",
                  (302, b"", {"Location": "https://sso.example.com/login"}))

    answered = portalctl("whoami", token="afp_x", server=portal.url)
    assert answered.code == 1 and moved in answered.stderr

    login = portalctl("login", "--server", portal.url)
    assert login.code == 1 and "https://sso.example.com/login" in login.stderr


def test_logout_forgets_a_corrupt_credentials_file(portalctl, folder):
    folder.mkdir(parents=True)
    (folder / "credentials.json").write_text("{not json")

    out = portalctl("logout")

    assert out.code == 0, out.stderr
    assert not (folder / "credentials.json").exists()


def test_a_credentials_file_that_cannot_be_written_is_an_error_message(scripted, portalctl,
                                                                     folder):
    portal = scripted()
    portal.answer("GET", "/api/v1/me/", ME)
    (folder / "credentials.json").mkdir(parents=True)  # a folder where the file should be

    out = portalctl("login", "--server", portal.url, "--token", "afp_x")

    assert out.code == 1 and "Cannot write" in out.stderr


# The device authorization grant (RFC 8628) against a stand-in identity provider.

@pytest.fixture
def provider(scripted):
    idp = scripted()
    idp.answer("GET", "/realms/r/.well-known/openid-configuration", {
        "token_endpoint": f"{idp.url}/token",
        "device_authorization_endpoint": f"{idp.url}/device"})
    idp.answer("POST", "/device", {"device_code": "dc", "user_code": "ABCD-EFGH",
                                   "verification_uri": f"{idp.url}/verify", "interval": 1,
                                   "expires_in": 600})
    idp.issuer = f"{idp.url}/realms/r"
    return idp


def sign_in(provider, sleep=lambda seconds: None) -> Credentials:
    return auth.device_sign_in(issuer=provider.issuer, client_id="portal-cli",
                               show=lambda grant: None, sleep=sleep)


def test_slow_down_is_told_by_its_error_code_and_adds_five_seconds(provider):
    # Keycloak's words: the description is for people, the code for programs.
    provider.answer("POST", "/token",
                    (400, {"error": "slow_down", "error_description": "Slow down"}),
                    (400, {"error": "authorization_pending",
                           "error_description": "The authorization request is still pending"}),
                    {"access_token": "at", "refresh_token": "rt", "expires_in": 60})
    slept = []

    credentials = sign_in(provider, sleep=slept.append)

    assert slept == [1, 6, 6]
    assert credentials.access_token == "at" and credentials.refresh_token == "rt"


def test_an_expired_code_and_the_codes_lifetime_passing_give_the_same_exit(provider):
    provider.answer("POST", "/token", (400, {"error": "expired_token",
                                             "error_description": "Device code expired"}))
    with pytest.raises(CliError) as expired:
        sign_in(provider)

    provider.answer("POST", "/device", {"device_code": "dc", "user_code": "ABCD-EFGH",
                                        "verification_uri": "https://x/verify",
                                        "interval": 0.01, "expires_in": 0.05})
    provider.answer("POST", "/token", (400, {"error": "authorization_pending"}))
    with pytest.raises(CliError) as passed:
        sign_in(provider, sleep=__import__("time").sleep)

    assert expired.value.code == passed.value.code == Exit.TIMEOUT
    assert "expired" in str(expired.value)


def test_a_refused_sign_in_shows_the_providers_words(provider):
    provider.answer("POST", "/token", (400, {"error": "access_denied",
                                             "error_description": "The user said no"}))
    with pytest.raises(CliError, match="The user said no") as refused:
        sign_in(provider)
    assert refused.value.code == Exit.AUTH


@pytest.mark.parametrize("reply", [
    (200, b"<html>maintenance</html>", {"Content-Type": "text/html"}),
    {"user_code": "ABCD", "verification_uri": "https://x/verify"},
    [1, 2],
])
def test_an_unusable_device_authorization_answer_is_an_error(provider, reply):
    provider.answer("POST", "/device", reply)
    with pytest.raises(CliError, match="device authorization answer is unusable"):
        sign_in(provider)


@pytest.mark.parametrize("reply", [
    (200, b"<html>maintenance</html>", {"Content-Type": "text/html"}),
    {"token_type": "Bearer"},
])
def test_an_unusable_token_answer_is_an_error(provider, reply):
    provider.answer("POST", "/token", reply)
    with pytest.raises(CliError, match="token answer is unusable"):
        sign_in(provider)
    stale = Credentials(access_token="old", kind="oidc", refresh_token="rt", expires_at=0,
                        token_endpoint=f"{provider.url}/token")
    with pytest.raises(CliError, match="token answer is unusable"):
        auth.fresh(stale, "portal-cli")


def test_a_discovery_document_that_is_not_an_object_is_an_error(provider):
    provider.answer("GET", "/realms/r/.well-known/openid-configuration", ["not", "a", "dict"])
    with pytest.raises(CliError, match="not an OpenID Connect discovery document"):
        sign_in(provider)
