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


def _oauth_error(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"{response.status_code} {response.reason}"
    return str(body.get("error_description") or body.get("error") or response.status_code)


def portal_sign_in(server: str) -> dict[str, Any]:
    """Where the portal at `server` says its people sign in: {"issuer", "client_id"} from its
    /.well-known/portalctl.json (an empty issuer: tokens only)."""
    url = server.rstrip("/") + "/.well-known/portalctl.json"
    try:
        response = requests.get(url, timeout=TIMEOUT, allow_redirects=False)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise CliError(f"Cannot read where {server} signs in ({url}): {exc}. Give --issuer URL "
                       f"(or --token).", Exit.UNREACHABLE) from exc
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
    if not document.get("device_authorization_endpoint"):
        raise CliError("The identity provider does not offer the device authorization grant.",
                       Exit.AUTH)
    return document


def _credentials(tokens: dict[str, Any], document: dict[str, Any]) -> Credentials:
    return Credentials(
        access_token=tokens["access_token"],
        kind="oidc",
        refresh_token=tokens.get("refresh_token", ""),
        expires_at=time.time() + float(tokens.get("expires_in") or 300),
        token_endpoint=document["token_endpoint"],
        revocation_endpoint=document.get("revocation_endpoint", ""),
    )


def device_sign_in(*, issuer: str, client_id: str, show: Callable[[dict[str, Any]], None],
                   waiting: Callable[[], None] = lambda: None,
                   sleep: Callable[[float], None] = time.sleep) -> Credentials:
    """Ask for a device code, `show` the person where to enter it, poll until they have."""
    document = discover(issuer)
    response = _post(document["device_authorization_endpoint"],
                     {"client_id": client_id, "scope": "openid"})
    if response.status_code != 200:
        raise CliError(f"The identity provider refused to start a sign-in: "
                       f"{_oauth_error(response)}", Exit.AUTH)
    grant = response.json()
    show(grant)
    interval = float(grant.get("interval") or 5)
    deadline = time.monotonic() + float(grant.get("expires_in") or 600)
    while time.monotonic() < deadline:
        sleep(interval)
        waiting()
        answer = _post(document["token_endpoint"], {
            "grant_type": DEVICE_GRANT, "device_code": grant["device_code"],
            "client_id": client_id,
        })
        if answer.status_code == 200:
            return _credentials(answer.json(), document)
        error = _oauth_error(answer)
        if error == "authorization_pending" or "pending" in error:
            continue
        if error == "slow_down":
            interval += 5  # RFC 8628, section 3.5
            continue
        raise CliError(f"Sign-in failed: {error}", Exit.AUTH)
    raise CliError("The sign-in code expired before it was entered.", Exit.TIMEOUT)


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
        raise CliError(f"Your sign-in has expired ({_oauth_error(answer)}): run portalctl login.",
                       Exit.AUTH)
    tokens = answer.json()
    credentials.access_token = tokens["access_token"]
    credentials.refresh_token = tokens.get("refresh_token") or credentials.refresh_token
    credentials.expires_at = time.time() + float(tokens.get("expires_in") or 300)
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
