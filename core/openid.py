"""The OpenID Connect provider (Keycloak) as seen from the portal: where its endpoints are, and
whether a JWT it signed is valid. Infrastructure: knows no domain, imports no app.

Endpoints come from the realm's discovery document (`OIDC_ISSUER_URL` +
`/.well-known/openid-configuration`, cached); any `OIDC_OP_*` endpoint set explicitly wins, and
when all the required ones are set no discovery request is made. Signing keys come from the JWKS
endpoint, cached, and fetched again (at most once a minute) when a token names an unknown key.
"""

import logging
from dataclasses import dataclass
from typing import Any

import jwt
import requests
from django.conf import settings

from core import caching

logger = logging.getLogger(__name__)

DISCOVERY_PATH = "/.well-known/openid-configuration"
# Unknown key ids make us fetch the JWKS again, but not more often than this (a flood of tokens
# with random kids must not turn into a flood of requests to Keycloak).
JWKS_REFETCH_INTERVAL = 60

_ENDPOINT_SETTINGS = {
    "authorization_endpoint": "OIDC_OP_AUTHORIZATION_ENDPOINT",
    "token_endpoint": "OIDC_OP_TOKEN_ENDPOINT",
    "userinfo_endpoint": "OIDC_OP_USER_ENDPOINT",
    "jwks_uri": "OIDC_OP_JWKS_ENDPOINT",
    "end_session_endpoint": "OIDC_OP_LOGOUT_ENDPOINT",
}
_REQUIRED = ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")


class ProviderUnavailable(Exception):
    """The provider could not be reached, or answered something that is not OpenID Connect."""


class TokenRejected(Exception):
    """A JWT failed validation; `reason` is one of REASONS."""

    REASONS = (
        "expired",
        "not-yet-valid",
        "audience",
        "issuer",
        "signature",
        "nonce",
        "type",
        "malformed",
    )

    def __init__(self, reason: str, message: str) -> None:
        assert reason in self.REASONS, reason
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class ProviderEndpoints:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str
    end_session_endpoint: str = ""
    introspection_endpoint: str = ""


def oidc_enabled() -> bool:
    """OIDC sign-in is on when a realm (issuer) and a client id are configured."""
    return bool(settings.OIDC_ISSUER_URL and settings.OIDC_RP_CLIENT_ID)


def _issuer() -> str:
    return settings.OIDC_ISSUER_URL.rstrip("/")


def _cache_key(kind: str, url: str) -> str:
    return caching.key(f"oidc-{kind}", url)


def _get_json(url: str) -> dict[str, Any]:
    return _provider_json("GET", url)


def _provider_json(method: str, url: str, *, data: dict | None = None,
                   bearer: str | None = None) -> dict[str, Any]:
    """The JSON object the provider answers at `url`. No answer, an error status or anything
    but a JSON object: ProviderUnavailable; a `bearer` token it refuses (401, 403):
    TokenRejected."""
    headers = {"Accept": "application/json"}
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    try:
        response = requests.request(
            method, url, data=data, timeout=settings.OIDC_TIMEOUT,
            verify=settings.OIDC_VERIFY_SSL, headers=headers,
        )
        if bearer is not None and response.status_code in (401, 403):
            raise TokenRejected("audience", "the provider refused the token at userinfo")
        response.raise_for_status()
        body = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"{url}: {exc}") from exc
    if not isinstance(body, dict):
        raise ProviderUnavailable(f"{url}: expected a JSON object")
    return body


def _discover(issuer: str) -> dict[str, Any]:
    key = _cache_key("discovery", issuer)
    document = caching.get("oidc-discovery", key)
    if document is None:
        document = _get_json(issuer + DISCOVERY_PATH)
        # OpenID Connect Discovery 1.0 §4.3: the document must name the issuer we asked.
        if str(document.get("issuer", "")).rstrip("/") != issuer:
            raise ProviderUnavailable(
                f"discovery at {issuer} names issuer {document.get('issuer')!r}; "
                "check OIDC_ISSUER_URL (it must be the realm URL exactly)"
            )
        caching.set("oidc-discovery", key, document, settings.OIDC_DISCOVERY_CACHE_SECONDS)
    return document


def provider_endpoints() -> ProviderEndpoints:
    """The provider's endpoints: explicit settings first, the rest from (cached) discovery."""
    issuer = _issuer()
    explicit = {
        field: getattr(settings, name, "")
        for field, name in _ENDPOINT_SETTINGS.items()
        if getattr(settings, name, "")
    }
    if all(field in explicit for field in _REQUIRED):
        # Keycloak's introspection endpoint sits under its token endpoint.
        introspection = explicit["token_endpoint"].rstrip("/") + "/introspect"
        return ProviderEndpoints(issuer=issuer, introspection_endpoint=introspection, **explicit)
    discovered = _discover(issuer)
    values = {field: discovered.get(field, "") or "" for field in _ENDPOINT_SETTINGS} | explicit
    missing = [field for field in _REQUIRED if not values[field]]
    if missing:
        raise ProviderUnavailable(f"discovery at {issuer} lacks {', '.join(missing)}")
    introspection = str(discovered.get("introspection_endpoint") or "")
    return ProviderEndpoints(issuer=issuer, introspection_endpoint=introspection, **values)


def _jwks(url: str, *, refresh: bool = False) -> list[dict[str, Any]]:
    key = _cache_key("jwks", url)
    keys = None if refresh else caching.get("oidc-jwks", key)
    if keys is None:
        keys = _get_json(url).get("keys")
        if not isinstance(keys, list):
            raise ProviderUnavailable(f"{url}: no 'keys' in the JWKS")
        caching.set("oidc-jwks", key, keys, settings.OIDC_JWKS_CACHE_SECONDS)
    return keys


def _may_refetch_jwks(url: str) -> bool:
    # One marker in the shared cache, so the limit holds across every worker and process.
    marker = caching.key("oidc-jwks-refetch", url)
    return caching.add("oidc-jwks-refetch", marker, True, JWKS_REFETCH_INTERVAL)


def _signing_key(header: dict[str, Any]) -> jwt.PyJWK:
    url = provider_endpoints().jwks_uri
    kid, alg = header.get("kid"), header.get("alg")

    def match(keys: list[dict[str, Any]]) -> dict[str, Any] | None:
        for candidate in keys:
            if candidate.get("use", "sig") != "sig":
                continue
            if kid is not None and candidate.get("kid") != kid:
                continue
            if candidate.get("alg", alg) != alg:
                continue
            return candidate
        return None

    found = match(_jwks(url))
    if found is None and _may_refetch_jwks(url):
        found = match(_jwks(url, refresh=True))
    if found is None:
        raise TokenRejected("signature", f"no signing key {kid!r} in the provider's JWKS")
    try:
        return jwt.PyJWK(found, algorithm=alg)
    except jwt.PyJWTError as exc:
        raise TokenRejected("signature", f"unusable signing key {kid!r}: {exc}") from exc


def forget_provider_metadata() -> None:
    """Drop the cached discovery document and keys (after settings changed, or in tests)."""
    issuer = _issuer()
    discovered = caching.get("oidc-discovery", _cache_key("discovery", issuer)) or {}
    caching.delete("oidc-discovery", _cache_key("discovery", issuer))
    urls = {discovered.get("jwks_uri"), getattr(settings, "OIDC_OP_JWKS_ENDPOINT", "")}
    for url in filter(None, urls):
        caching.delete("oidc-jwks", _cache_key("jwks", url))
        caching.delete("oidc-jwks-refetch", caching.key("oidc-jwks-refetch", url))


_ERRORS: list[tuple[type[Exception], str]] = [
    (jwt.ExpiredSignatureError, "expired"),
    (jwt.ImmatureSignatureError, "not-yet-valid"),
    (jwt.InvalidAudienceError, "audience"),
    (jwt.InvalidIssuerError, "issuer"),
    (jwt.InvalidSignatureError, "signature"),
    (jwt.InvalidAlgorithmError, "signature"),
    (jwt.InvalidTokenError, "malformed"),
]


def validate_jwt(
    token: str,
    *,
    audience: str,
    kind: str,
    nonce: str | None = None,
) -> dict[str, Any]:
    """The claims of `token` if the provider signed it for `audience`, else TokenRejected.

    Checks: RS256 signature against the provider's JWKS, `iss` is OIDC_ISSUER_URL, `aud`
    includes `audience`, `exp`/`iat`/`nbf` within OIDC_CLOCK_LEEWAY seconds; for an ID token
    (`kind="id"`) the nonce, for an access token (`kind="access"`) that it says it is one
    (Keycloak's `typ: Bearer` claim or RFC 9068's `at+jwt` header), so that an ID token is never
    accepted as a bearer token.
    """
    algorithm = settings.OIDC_RP_SIGN_ALGO
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError as exc:
        raise TokenRejected("malformed", f"not a JWT: {exc}") from exc
    if header.get("alg") != algorithm:
        raise TokenRejected("signature", f"algorithm {header.get('alg')!r} is not {algorithm}")
    key = _signing_key(header)
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[algorithm],
            audience=audience,
            issuer=_issuer(),
            leeway=settings.OIDC_CLOCK_LEEWAY,
            options={"require": ["exp", "iat", "iss", "aud", "sub"]},
        )
    except jwt.InvalidTokenError as exc:
        reason = next(reason for error, reason in _ERRORS if isinstance(exc, error))
        raise TokenRejected(reason, str(exc)) from exc

    if kind == "id":
        if nonce is not None and claims.get("nonce") != nonce:
            raise TokenRejected("nonce", "the ID token's nonce does not match the sign-in")
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        # OpenID Connect Core §3.1.3.7: with several audiences, azp must be this client.
        if len(audiences) > 1 and claims.get("azp") != audience:
            raise TokenRejected("audience", "the ID token was issued to another client (azp)")
        if str(claims.get("typ", "ID")).lower() != "id":
            raise TokenRejected("type", "not an ID token")
    elif kind == "access":
        says_access = str(claims.get("typ", "")).lower() == "bearer" or str(
            header.get("typ", "")
        ).lower() in {"at+jwt", "application/at+jwt"}
        if not says_access:
            raise TokenRejected("type", "not an access token (an ID token is not a bearer token)")
    else:
        raise ValueError(f"unknown token kind {kind!r}")
    return claims


def introspect(token: str) -> dict[str, Any]:
    """Keycloak's RFC 7662 introspection answer for `token` (`active`, and the token's claims
    when active), asked with the portal's confidential client. Unreachable or unreadable:
    ProviderUnavailable. core.bearer caches the answer."""
    url = provider_endpoints().introspection_endpoint
    if not url:
        raise ProviderUnavailable("the provider names no introspection endpoint")
    body = _provider_json("POST", url, data={
        "token": token,
        "token_type_hint": "access_token",
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "client_secret": settings.OIDC_RP_CLIENT_SECRET,
    })
    if not isinstance(body.get("active"), bool):
        raise ProviderUnavailable(f"{url}: no 'active' in the introspection answer")
    return body


def userinfo(token: str) -> dict[str, Any]:
    """The userinfo claims `token` gives access to (for an opaque token whose introspection
    answer lacks the user's claims). A refused token: TokenRejected."""
    url = provider_endpoints().userinfo_endpoint
    return _provider_json("GET", url, bearer=token)
