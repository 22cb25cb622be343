"""The test OpenID Connect provider (tests/oidc_provider/server.js) and sign-in flows over it.

The provider is npm's oidc-provider (OpenID Certified) mounted like a Keycloak realm, started as
a child process on 127.0.0.1, port 0. Tests drive it through its /admin/* helpers (change a
user's groups, disable or delete a user, make the Admin REST API fail, tamper with the next ID
token, re-sign a token) and sign in over
plain HTTP with `requests` (fast) or in Chromium (tests/tenants/test_oidc_browser.py).
"""

import base64
import hashlib
import html
import json
import os
import re
import secrets
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlparse

import requests

PROVIDER_DIR = Path(__file__).resolve().parents[1] / "oidc_provider"
READY_PREFIX = "OIDC_PROVIDER_READY "
FIXTURE = json.loads((PROVIDER_DIR / "users.json").read_text())
CLIENT_ID = "portal"
CLIENT_SECRET = FIXTURE["clients"]["portal"]["secret"]
# The directory sync's service-account client (client-credentials grant, Admin REST API).
DIRECTORY_CLIENT_ID = FIXTURE["clients"]["portal-directory"]["client_id"]
DIRECTORY_CLIENT_SECRET = FIXTURE["clients"]["portal-directory"]["secret"]
# A CI system's client (client-credentials grant) that a portal service account maps.
CI_CLIENT_ID = FIXTURE["clients"]["portal-ci"]["client_id"]
CI_CLIENT_SECRET = FIXTURE["clients"]["portal-ci"]["secret"]
CLI_REDIRECT_URI = "http://127.0.0.1/callback"
PORTAL_RESOURCE = "urn:ai-factory:portal"
OTHER_RESOURCE = "urn:ai-factory:other-service"
USERS = {user["username"]: user for user in FIXTURE["users"]}
HTTP_TIMEOUT = 10


def password_of(username: str) -> str:
    return USERS[username]["password"]


@dataclass
class OidcProvider:
    issuer: str
    admin_url: str
    process: subprocess.Popen
    log_path: Path
    http: requests.Session = field(default_factory=requests.Session)

    def _admin(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        response = self.http.request(
            method, f"{self.admin_url}{path}", json=body or {}, timeout=HTTP_TIMEOUT
        )
        response.raise_for_status()
        return response.json()

    def reset(self) -> None:
        """Users back to the fixture, pending tampering dropped, counters zeroed."""
        self._admin("POST", "/reset")

    def update_user(self, username: str, **changes: Any) -> None:
        """Change `groups`, `realm_roles`, `client_roles`, `enabled`, `email` or
        `email_verified` of a user."""
        self._admin("POST", f"/users/{username}", changes)

    def add_user(self, username: str, **fields: Any) -> None:
        """Add a user (`sub`, `email`, `groups`, …) until the next reset."""
        self._admin("PUT", f"/users/{username}", fields)

    def delete_user(self, username: str) -> None:
        """Delete the user (the Admin REST API then answers 404 for their id)."""
        self._admin("DELETE", f"/users/{username}")

    def fail_directory(self, *, status: int = 503, remaining: int = 1000, after: int = 0) -> None:
        """After `after` more Admin REST API calls, the next `remaining` answer `status`."""
        body = {"status": status, "remaining": remaining, "after": after}
        self._admin("POST", "/directory-fault", body)

    def directory_access(
        self, *, roles: list[str] | None = None, delay_ms: int | None = None
    ) -> dict[str, Any]:
        """The directory client's realm-management `roles` (the realm export's until the next
        reset), and `delay_ms` before every Admin REST API answer (a slow Keycloak)."""
        body: dict[str, Any] = {}
        if roles is not None:
            body["roles"] = roles
        if delay_ms is not None:
            body["delay_ms"] = delay_ms
        return self._admin("POST", "/directory-access", body)

    def tamper_next_id_token(
        self, username: str, *, claims: dict | None = None, corrupt_signature: bool = False
    ) -> None:
        """The next ID token issued to `username` gets `claims` (re-signed with the realm's
        key) or a broken signature."""
        body = {"claims": claims or {}, "corrupt_signature": corrupt_signature}
        self._admin("POST", f"/users/{username}/next-id-token", body)

    def resign(
        self,
        token: str,
        *,
        claims: dict | None = None,
        header_typ: str = "",
        kid: str = "",
        rotated: bool = False,
        foreign_key: bool = False,
    ) -> str:
        """`token` with `claims` changed (None removes one), signed again with the realm's own
        key (`rotated`: its newest key from rotate_key; `foreign_key`: a key the realm never
        published, under the realm key's id); `header_typ` replaces the JOSE header's typ, `kid`
        the key id it names."""
        body = {
            "token": token,
            "claims": claims or {},
            "rotated": rotated,
            "foreign_key": foreign_key,
        }
        if header_typ:
            body["header_typ"] = header_typ
        if kid:
            body["kid"] = kid
        return self._admin("POST", "/resign", body)["token"]

    def rotate_key(self) -> str:
        """The realm gets a new signing key, published first in its JWKS; returns its kid."""
        return self._admin("POST", "/rotate-key")["kid"]

    def stats(self) -> dict[str, int]:
        return self._admin("GET", "/stats")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.http.close()
        self.log_path.unlink(missing_ok=True)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_provider(*, portal_urls: list[str], timeout: float = 15.0) -> OidcProvider:
    """Start the provider for a portal at `portal_urls`; returns once it serves."""
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        raise RuntimeError(
            "The test OIDC provider is not installed: run `make install-test` "
            "(it runs `npm ci` in tests/oidc_provider)."
        )
    log_file = tempfile.NamedTemporaryFile(  # noqa: SIM115 - the child process writes to it
        prefix="oidc-provider-", suffix=".log", delete=False
    )
    process = subprocess.Popen(
        ["node", "server.js"],
        cwd=PROVIDER_DIR,
        # The device flow's clients poll each second (Keycloak's default is every 5).
        env={**os.environ, "PORTAL_URLS": ",".join(portal_urls), "PORTAL_CLIENT_ID": CLIENT_ID,
             "DEVICE_POLL_INTERVAL": "1"},
        stdout=log_file,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    log_file.close()
    log_path = Path(log_file.name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log_path.read_text(errors="replace").splitlines():
            if line.startswith(READY_PREFIX):
                info = json.loads(line[len(READY_PREFIX) :])
                return OidcProvider(
                    issuer=info["issuer"],
                    admin_url=info["admin"],
                    process=process,
                    log_path=log_path,
                )
        if process.poll() is not None:
            break
        time.sleep(0.05)
    if process.poll() is None:
        process.kill()
        process.wait(timeout=5)
    raise RuntimeError(f"The test OIDC provider did not start:\n{log_path.read_text()}")


# --- Sign-in flows over plain HTTP -----------------------------------------------------


def follow(session: requests.Session, response: requests.Response, *, stop_at: str = ""):
    """Follow redirects one at a time; stop *before* requesting a URL starting with `stop_at`."""
    for _ in range(20):
        if not response.is_redirect:
            return response
        target = urljoin(response.url, response.headers["Location"])
        if stop_at and target.startswith(stop_at):
            return response
        response = session.get(target, allow_redirects=False, timeout=HTTP_TIMEOUT)
    raise AssertionError("too many redirects")


def submit_login_form(session: requests.Session, page: requests.Response, username: str):
    """Fill the provider's login page (Keycloak's #kc-form-login) and submit it."""
    assert 'id="kc-form-login"' in page.text, page.text[:500]
    action = re.search(r'id="kc-form-login" method="post" action="([^"]+)"', page.text).group(1)
    return session.post(
        urljoin(page.url, action),
        data={"username": username, "password": password_of(username)},
        allow_redirects=False,
        timeout=HTTP_TIMEOUT,
    )


def portal_sign_in(
    session: requests.Session, portal_url: str, username: str, *, stop_at_callback: bool = False
) -> requests.Response:
    """Click "Sign in with Keycloak", sign in at the provider, come back to the portal.

    Returns the portal's final page, or with `stop_at_callback` the provider's redirect to the
    portal's callback (its Location holds code and state) without following it.
    """
    start = session.get(
        f"{portal_url}/oidc/authenticate/", allow_redirects=False, timeout=HTTP_TIMEOUT
    )
    login_page = follow(session, start)
    answer = submit_login_form(session, login_page, username)
    callback = f"{portal_url}/oidc/callback/"
    return follow(session, answer, stop_at=callback if stop_at_callback else "")


def opaque_access_token(provider: OidcProvider, username: str, *, portal_url: str) -> str:
    """An opaque access token for `username`, issued to the portal's own client (code flow with
    PKCE and its secret, no resource indicator): the provider issues such tokens opaque."""
    verifier = secrets.token_urlsafe(48)
    challenge = (
        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    )
    redirect_uri = f"{portal_url}/oidc/callback/"
    with requests.Session() as session:
        start = session.get(
            f"{provider.issuer}/protocol/openid-connect/auth",
            params={
                "client_id": CLIENT_ID,
                "response_type": "code",
                "scope": "openid profile email",
                "redirect_uri": redirect_uri,
                "state": secrets.token_urlsafe(8),
                "nonce": secrets.token_urlsafe(8),
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            },
            allow_redirects=False,
            timeout=HTTP_TIMEOUT,
        )
        answer = submit_login_form(session, follow(session, start), username)
        redirect = follow(session, answer, stop_at=redirect_uri)
        location = urljoin(redirect.url, redirect.headers["Location"])
        code = parse_qs(urlparse(location).query)["code"][0]
        token = session.post(
            f"{provider.issuer}/protocol/openid-connect/token",
            data={
                "grant_type": "authorization_code",
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
            },
            timeout=HTTP_TIMEOUT,
        )
        token.raise_for_status()
        access = token.json()["access_token"]
        assert access.count(".") != 2, "expected an opaque access token"
        return access


def cli_access_token(provider: OidcProvider, username: str, *, resource: str = PORTAL_RESOURCE):
    """An access token for `username` as a script gets one: authorization code + PKCE with the
    public `portal-cli` client (the token is a JWT for `resource`'s audience)."""
    verifier = secrets.token_urlsafe(48)
    challenge = (
        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    )
    with requests.Session() as session:
        start = session.get(
            f"{provider.issuer}/protocol/openid-connect/auth",
            params={
                "client_id": "portal-cli",
                "response_type": "code",
                "scope": "openid portal",
                "redirect_uri": CLI_REDIRECT_URI,
                "state": secrets.token_urlsafe(8),
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": resource,
            },
            allow_redirects=False,
            timeout=HTTP_TIMEOUT,
        )
        answer = submit_login_form(session, follow(session, start), username)
        redirect = follow(session, answer, stop_at=CLI_REDIRECT_URI)
        location = urljoin(redirect.url, redirect.headers["Location"])
        code = parse_qs(urlparse(location).query)["code"][0]
        token = session.post(
            f"{provider.issuer}/protocol/openid-connect/token",
            data={
                "grant_type": "authorization_code",
                "client_id": "portal-cli",
                "code": code,
                "redirect_uri": CLI_REDIRECT_URI,
                "code_verifier": verifier,
                "resource": resource,
            },
            timeout=HTTP_TIMEOUT,
        )
        token.raise_for_status()
        return token.json()["access_token"]


def client_credentials_token(
    provider: OidcProvider, *, client_id: str = CI_CLIENT_ID, secret: str = CI_CLIENT_SECRET,
    resource: str = PORTAL_RESOURCE,
) -> str:
    """An access token of a confidential client's own (its service account's), as a CI system
    gets one: the client-credentials grant, a JWT for `resource`'s audience."""
    token = requests.post(
        f"{provider.issuer}/protocol/openid-connect/token",
        data={"grant_type": "client_credentials", "client_id": client_id,
              "client_secret": secret, "resource": resource},
        timeout=HTTP_TIMEOUT,
    )
    token.raise_for_status()
    return token.json()["access_token"]


def _post_hidden_form(session: requests.Session, page: requests.Response) -> requests.Response:
    """Submit the page's form with its hidden fields (xsrf, user_code, confirm) as they are."""
    action = re.search(r'<form[^>]*method="post"[^>]*action="([^"]+)"', page.text)
    assert action, page.text[:500]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
    return session.post(urljoin(page.url, html.unescape(action.group(1))), data=fields,
                        allow_redirects=False, timeout=HTTP_TIMEOUT)


def device_sign_in(verification_uri_complete: str, username: str) -> None:
    """What the person does in a browser for the device flow: open the link the CLI showed,
    confirm the code, sign in; the provider then says the device may go on."""
    with requests.Session() as session:
        page = session.get(verification_uri_complete, timeout=HTTP_TIMEOUT)
        page = follow(session, _post_hidden_form(session, page))  # the code, carried in the link
        assert 'id="kc-device-user-code"' in page.text, page.text[:500]
        page = follow(session, _post_hidden_form(session, page))  # "Yes": grant access
        page = follow(session, submit_login_form(session, page, username))
        assert 'id="kc-device-success"' in page.text, page.text[:500]
