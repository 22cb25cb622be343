"""Signing in against portals and identity providers that answer oddly (stand-in HTTP servers on
127.0.0.1): stored credentials go only to their own portal; the device grant's answers are
told apart by their `error` code; plain http is refused but for this machine; a redirect is
named; an unusable answer is an error message, never a traceback; logout always forgets."""

import json

import pytest

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
