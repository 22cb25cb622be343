"""Keycloak bearer access tokens, checked with as few calls to Keycloak as the token allows.

A JWT signed by the realm is checked locally: signature against the realm's JWKS (kept in
Django's cache, fetched again for an unknown key id at most once a minute), issuer, audience,
expiry. No call to Keycloak per request; a token revoked in Keycloak is then accepted until it
expires, unless OIDC_INTROSPECT_ACCESS_TOKENS asks Keycloak as well. An opaque token can only be
checked by Keycloak: its introspection answer is kept in Django's cache under the token's SHA-256
digest (never the token) for OIDC_INTROSPECTION_CACHE_SECONDS, and never past the token's `exp`.
"""

import hashlib
import time
from typing import Any

from django.conf import settings

from core import caching
from core.openid import TokenRejected, introspect, userinfo, validate_jwt

# Claims a user sync needs; an introspection answer without them is completed from userinfo.
_USER_CLAIMS = ("preferred_username", "groups")


class TokenInactive(Exception):
    """Keycloak says the token is no longer active (revoked, session ended, user disabled)."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _introspected(token: str, *, opaque: bool) -> dict[str, Any]:
    cache_key = caching.key("oidc-introspection", _digest(token))
    answer = caching.get("oidc-introspection", cache_key)
    if answer is None:
        answer = _ask_keycloak(token, opaque=opaque)
        ttl = settings.OIDC_INTROSPECTION_CACHE_SECONDS
        if answer["active"] and isinstance(answer.get("exp"), int | float):
            ttl = min(ttl, int(answer["exp"] - time.time()))
        if ttl > 0:
            caching.set("oidc-introspection", cache_key, answer, ttl)
    if not answer["active"]:
        raise TokenInactive()
    if answer.get("rejected"):
        raise TokenRejected(*answer["rejected"])
    if opaque:
        _check_opaque_claims(answer, audience=settings.OIDC_API_AUDIENCE)
    return answer


def _ask_keycloak(token: str, *, opaque: bool) -> dict[str, Any]:
    answer = introspect(token)
    if not (answer["active"] and opaque):
        return answer
    try:
        _check_opaque_claims(answer, audience=settings.OIDC_API_AUDIENCE)
    except TokenRejected as exc:
        # Kept like any answer, so a stream of tokens for another service is not re-asked.
        return {"active": True, "exp": answer.get("exp"), "rejected": [exc.reason, exc.message]}
    if any(claim not in answer for claim in _USER_CLAIMS):
        # An opaque token's introspection may name only sub, scope and client; the user's
        # claims are at userinfo, asked once and kept with the answer.
        extra = userinfo(token)
        if extra.get("sub") != answer.get("sub"):
            raise TokenRejected("malformed", "userinfo names another subject")
        answer = {**extra, **answer}
    return answer


def _check_opaque_claims(claims: dict[str, Any], *, audience: str) -> None:
    now = time.time()
    if isinstance(claims.get("exp"), int | float) and claims["exp"] < now:
        raise TokenRejected("expired", "the token has expired")
    issuer = settings.OIDC_ISSUER_URL.rstrip("/")
    if "iss" in claims and str(claims["iss"]).rstrip("/") != issuer:
        raise TokenRejected("issuer", "the token was issued by another realm")
    audiences = claims.get("aud") or []
    audiences = audiences if isinstance(audiences, list) else [audiences]
    # Without an audience, only a token issued to the portal's own client is for the portal.
    if audience not in audiences and not (
        not audiences and claims.get("client_id") == settings.OIDC_RP_CLIENT_ID
    ):
        raise TokenRejected("audience", f"the token's audience does not include {audience}")
    if not claims.get("sub"):
        raise TokenRejected("malformed", "the token names no subject")


def bearer_token_claims(token: str) -> dict[str, Any]:
    """The claims of a Keycloak access token meant for the portal's API.

    Raises TokenRejected (not for us, or not valid), TokenInactive (Keycloak no longer holds it
    active) or ProviderUnavailable (Keycloak could not be asked when it had to be).
    """
    audience = settings.OIDC_API_AUDIENCE
    if token.count(".") == 2:
        claims = validate_jwt(token, audience=audience, kind="access")
        if settings.OIDC_INTROSPECT_ACCESS_TOKENS:
            _introspected(token, opaque=False)
        return claims
    return _introspected(token, opaque=True)
