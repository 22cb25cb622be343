"""Signing in: Keycloak's OAuth 2.0 device authorization grant (RFC 8628), found through the
issuer's discovery document, and the renewal of its access token with the refresh token."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests

from .config import Credentials
from .exits import CliError, Exit

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
TIMEOUT = 15.0
# Renew an access token this long before it expires.
EXPIRY_MARGIN = 30.0


def _post(url: str, data: dict[str, str]) -> requests.Response:
    try:
        return requests.post(url, data=data, timeout=TIMEOUT)
    except requests.RequestException as exc:
        raise CliError(f"Cannot reach the identity provider: {exc}", Exit.UNREACHABLE) from exc


def _body(response: requests.Response) -> dict[str, Any]:
    """The JSON object an answer holds ({} for anything else)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _oauth_error(response: requests.Response) -> tuple[str, str]:
    """An OAuth error answer (RFC 6749, section 5.2) as (its `error` code, a message for the
    person: its description when it has one). Decisions are made on the code only."""
    body = _body(response)
    code = str(body.get("error") or "")
    message = str(body.get("error_description") or code
                  or f"{response.status_code} {response.reason}")
    return code, message


def _json(response: requests.Response, what: str, *required: str) -> dict[str, Any]:
    """A 200 answer's JSON object, with `required` fields; CliError naming `what` otherwise."""
    body = _body(response)
    missing = [name for name in required if not body.get(name)]
    if not body or missing:
        detail = f"it lacks {', '.join(missing)}" if body else "it is not a JSON object"
        raise CliError(f"The identity provider's {what} answer is unusable ({detail}).",
                       Exit.ERROR)
    return body


def _redirect(response: requests.Response) -> str:
    location = response.headers.get("Location", "")
    return f" (redirected to {location})" if location else ""


def portal_sign_in(server: str) -> dict[str, Any]:
    """Where the portal at `server` says its people sign in: {"issuer", "client_id"} from its
    /.well-known/portalctl.json (an empty issuer: tokens only)."""
    url = server.rstrip("/") + "/.well-known/portalctl.json"
    try:
        response = requests.get(url, timeout=TIMEOUT, allow_redirects=False)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise CliError(f"Cannot read where {server} signs in ({url}): {exc}. Give --issuer URL "
                       f"(or --token).", Exit.UNREACHABLE) from exc
    if response.is_redirect:  # tokens are not sent after a redirect: name where it leads
        raise CliError(f"{url} answered {response.status_code}{_redirect(response)}: give the "
                       f"portal's own URL as --server.", Exit.ERROR)
    try:
        document = response.json()
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise CliError(f"{url} is not the portal's sign-in document: is the server URL right?",
                       Exit.ERROR)
    return document


def discover(issuer: str) -> dict[str, Any]:
    """The issuer's OpenID Connect discovery document."""
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise CliError(f"Cannot read the identity provider's discovery document at {url}: "
                       f"{exc}", Exit.UNREACHABLE) from exc
    if not isinstance(document, dict) or not document.get("token_endpoint"):
        raise CliError(f"{url} is not an OpenID Connect discovery document.", Exit.ERROR)
    if not document.get("device_authorization_endpoint"):
        raise CliError("The identity provider does not offer the device authorization grant.",
                       Exit.AUTH)
    return document


def _credentials(tokens: dict[str, Any], document: dict[str, Any]) -> Credentials:
    return Credentials(
        access_token=str(tokens["access_token"]),
        kind="oidc",
        refresh_token=str(tokens.get("refresh_token") or ""),
        expires_at=time.time() + _lifetime(tokens),
        token_endpoint=document["token_endpoint"],
        revocation_endpoint=document.get("revocation_endpoint", ""),
    )


def _lifetime(tokens: dict[str, Any]) -> float:
    try:
        return float(tokens.get("expires_in") or 300)
    except (TypeError, ValueError):
        return 300.0


def device_sign_in(*, issuer: str, client_id: str, show: Callable[[dict[str, Any]], None],
                   waiting: Callable[[], None] = lambda: None,
                   sleep: Callable[[float], None] = time.sleep) -> Credentials:
    """Ask for a device code, `show` the person where to enter it, poll until they have.

    The token endpoint's answers are told apart by their `error` code (RFC 8628, section 3.5):
    authorization_pending polls on, slow_down adds 5 s to the interval, access_denied is a
    refusal (exit 4), expired_token, like the code's lifetime passing here, a timeout (exit 5).
    """
    document = discover(issuer)
    response = _post(document["device_authorization_endpoint"],
                     {"client_id": client_id, "scope": "openid"})
    if response.status_code != 200:
        raise CliError(f"The identity provider refused to start a sign-in: "
                       f"{_oauth_error(response)[1]}", Exit.AUTH)
    grant = _json(response, "device authorization", "device_code", "user_code",
                  "verification_uri")
    try:
        interval = float(grant.get("interval") or 5)
        lifetime = float(grant.get("expires_in") or 600)
    except (TypeError, ValueError) as exc:
        raise CliError(f"The identity provider's device authorization answer is unusable "
                       f"({exc}).", Exit.ERROR) from exc
    show(grant)
    deadline = time.monotonic() + lifetime
    while time.monotonic() < deadline:
        sleep(interval)
        waiting()
        answer = _post(document["token_endpoint"], {
            "grant_type": DEVICE_GRANT, "device_code": str(grant["device_code"]),
            "client_id": client_id,
        })
        if answer.status_code == 200:
            return _credentials(_json(answer, "token", "access_token"), document)
        error, message = _oauth_error(answer)
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += 5  # RFC 8628, section 3.5
            continue
        if error == "expired_token":
            break
        if error == "access_denied":
            raise CliError(f"Sign-in refused: {message}", Exit.AUTH)
        raise CliError(f"Sign-in failed: {message}", Exit.AUTH)
    raise CliError("The sign-in code expired before it was entered: run portalctl login again.",
                   Exit.TIMEOUT)


def fresh(credentials: Credentials, client_id: str) -> Credentials:
    """`credentials` with an access token that has some life left: renewed with its refresh
    token (and saved) when it is about to expire. A personal token is returned as it is."""
    if credentials.kind != "oidc" or time.time() < credentials.expires_at - EXPIRY_MARGIN:
        return credentials
    if not credentials.refresh_token:
        raise CliError("Your sign-in has expired: run portalctl login.", Exit.AUTH)
    answer = _post(credentials.token_endpoint, {
        "grant_type": "refresh_token", "refresh_token": credentials.refresh_token,
        "client_id": client_id,
    })
    if answer.status_code != 200:
        raise CliError(f"Your sign-in has expired ({_oauth_error(answer)[1]}): run portalctl "
                       f"login.", Exit.AUTH)
    tokens = _json(answer, "token", "access_token")
    credentials.access_token = str(tokens["access_token"])
    credentials.refresh_token = str(tokens.get("refresh_token") or credentials.refresh_token)
    credentials.expires_at = time.time() + _lifetime(tokens)
    credentials.save()
    return credentials


def revoke(credentials: Credentials, client_id: str) -> None:
    """Tell the identity provider the tokens are no longer wanted (best effort: signing out
    locally never depends on it)."""
    if credentials.kind != "oidc" or not credentials.revocation_endpoint:
        return
    for token in (credentials.refresh_token, credentials.access_token):
        if token:
            try:
                requests.post(credentials.revocation_endpoint, timeout=TIMEOUT,
                              data={"token": token, "client_id": client_id})
            except requests.RequestException:
                return
