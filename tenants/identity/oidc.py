"""Signing in with Keycloak (interfaces): the authentication backend, the session refresh, the
bearer-token authentication of the API, and the URL that signs out of Keycloak too.

Everything reads its configuration per request (issuer, client, endpoints from cached discovery),
so that the portal starts, and local accounts work, while Keycloak is down or not configured.
Errors are raised as `SignInRejected(reason)` or `ProviderUnavailable` for the callback view to
turn into a page that says what happened.
"""

import hashlib
import logging
import time
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model
from django.contrib.auth.backends import ModelBackend
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.urls import reverse
from django.utils.module_loading import import_string
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.middleware import SessionRefresh
from rest_framework import authentication, exceptions

from core import caching
from core.api.scopes import ScopedClaims
from core.bearer import TokenInactive, bearer_token_claims
from core.openid import (
    ProviderUnavailable,
    TokenRejected,
    oidc_enabled,
    provider_endpoints,
    validate_jwt,
)

from ..access.selectors import service_account_for_client
from ..access.service_accounts import service_account_note_keycloak_use
from .claims import grants_from_claims
from .sync import claim_rules, keycloak_user_sync

logger = logging.getLogger(__name__)

FAILURE_URL_NAME = "oidc-failed"


class SignInRejected(Exception):
    """A sign-in through Keycloak that must not succeed; `reason` names the failure page."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason


def failure_url(reason: str) -> str:
    return f"{reverse(FAILURE_URL_NAME)}?{urlencode({'reason': reason})}"


def _oauth_error(response: requests.Response) -> str:
    try:
        return str(response.json().get("error", ""))
    except (ValueError, AttributeError):
        return ""


def _sync_user(claims: dict[str, Any]):
    if not claims.get("sub"):
        raise SignInRejected("claims", "no sub claim")
    return keycloak_user_sync(
        issuer=settings.OIDC_ISSUER_URL.rstrip("/"),
        claims=claims,
        grants=grants_from_claims(claims, claim_rules()),
    )


class KeycloakBackend(OIDCAuthenticationBackend):
    """Authorization code flow with PKCE, state and nonce; users matched on `sub`.

    The ID token is validated in full (signature against the JWKS, issuer, audience, expiry with
    OIDC_CLOCK_LEEWAY, nonce), userinfo is merged over its claims, and the claims are mapped to
    roles and memberships at every sign-in and every silent refresh.
    """

    def __init__(self, *args, **kwargs):
        # No settings are read here: Django builds every backend for every password sign-in,
        # and those must work while Keycloak is unconfigured or down.
        self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        # Only the callback view passes a nonce; a password form never reaches Keycloak.
        if request is None or "nonce" not in kwargs or not oidc_enabled():
            return None
        endpoints = provider_endpoints()
        self.OIDC_OP_TOKEN_ENDPOINT = endpoints.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = endpoints.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = endpoints.jwks_uri
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        try:
            return super().authenticate(request, **kwargs)
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise ProviderUnavailable(str(exc)) from exc
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            if not 400 <= status < 500:
                raise ProviderUnavailable(str(exc)) from exc
            # invalid_grant: the code was used already, has expired, or its PKCE verifier is
            # wrong. Anything else (invalid_client: a wrong secret) is the realm refusing us.
            reason = "code" if _oauth_error(exc.response) == "invalid_grant" else "provider-refused"
            raise SignInRejected(reason, str(exc)) from exc
        except ValueError as exc:  # a token or userinfo response that is not JSON
            raise ProviderUnavailable(f"unreadable answer from Keycloak: {exc}") from exc

    def verify_token(self, token, **kwargs):
        if not token:
            raise SignInRejected("token-malformed", "no ID token in the token response")
        try:
            return validate_jwt(
                token, audience=self.OIDC_RP_CLIENT_ID, kind="id", nonce=kwargs.get("nonce")
            )
        except TokenRejected as exc:
            raise SignInRejected(f"token-{exc.reason}", exc.message) from exc

    def get_userinfo(self, access_token, id_token, payload):
        """The ID token's claims with userinfo's over them (both carry Keycloak's mappers)."""
        userinfo = super().get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload.get("sub"):
            # OpenID Connect Core §5.3.2: a userinfo response for someone else is an attack.
            raise SignInRejected("claims", "userinfo sub differs from the ID token's")
        return {**payload, **userinfo}

    def get_or_create_user(self, access_token, id_token, payload):
        return _sync_user(self.get_userinfo(access_token, id_token, payload))

    def get_user(self, user_id):
        # Django's rule, not mozilla-django-oidc's: an inactive user has no session.
        return ModelBackend.get_user(self, user_id)


def provider_logout_url(request) -> str:
    """Where signing out sends the browser: Keycloak's end-session endpoint for a Keycloak
    session (RP-initiated logout with id_token_hint, back to the sign-in page), else the
    sign-in page. Named by OIDC_OP_LOGOUT_URL_METHOD."""
    local = resolve_url(settings.LOGOUT_REDIRECT_URL)
    backend_path = request.session.get(BACKEND_SESSION_KEY, "")
    id_token = request.session.get("oidc_id_token")
    if not (oidc_enabled() and id_token and backend_path):
        return local
    if not issubclass(import_string(backend_path), OIDCAuthenticationBackend):
        return local
    try:
        end_session = provider_endpoints().end_session_endpoint
    except ProviderUnavailable:
        logger.warning("Keycloak unreachable at sign-out: only the portal session ends")
        return local
    if not end_session:
        return local
    query = urlencode(
        {
            "id_token_hint": id_token,
            "post_logout_redirect_uri": request.build_absolute_uri(local),
            "client_id": settings.OIDC_RP_CLIENT_ID,
        }
    )
    return f"{end_session}?{query}"


class KeycloakSessionRefresh(SessionRefresh):
    """After OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS, a page view goes through Keycloak again with
    prompt=none: silent while the Keycloak session lives, and the end of the portal session
    once the user is disabled or signed out in Keycloak. htmx requests get a full reload
    instead of a cross-origin redirect they could not follow."""

    def __init__(self, get_response):
        # Settings are read per request (see the properties), not frozen at start-up.
        super(SessionRefresh, self).__init__(get_response)

    OIDC_OP_AUTHORIZATION_ENDPOINT = property(
        lambda self: provider_endpoints().authorization_endpoint
    )
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_RP_SCOPES = property(lambda self: settings.OIDC_RP_SCOPES)
    OIDC_EXEMPT_URLS = property(lambda self: settings.OIDC_EXEMPT_URLS)
    OIDC_STATE_SIZE = 32
    OIDC_NONCE_SIZE = 32
    OIDC_USE_NONCE = True
    OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"

    def process_request(self, request):
        if not oidc_enabled() or not self.is_refreshable_url(request):
            return None
        if request.session.get("oidc_id_token_expiration", 0) > time.time():
            return None
        if request.headers.get("HX-Request"):
            return HttpResponse(status=204, headers={"HX-Refresh": "true"})
        try:
            return super().process_request(request)
        except ProviderUnavailable as exc:
            logger.warning("Keycloak unreachable for a session refresh: %s", exc)
            return HttpResponseRedirect(failure_url("provider-down"))


class ProviderUnavailableError(exceptions.APIException):
    status_code = 503
    default_detail = "Keycloak cannot be reached to verify the token; try again shortly."
    default_code = "provider_unavailable"


SERVICE_ACCOUNT_USER_PREFIX = "service-account-"


class NotAServiceAccount(Exception):
    """A Keycloak client's own token (client-credentials grant) that no service account of
    the portal takes: it must not be synced as a person."""


def _service_account_of(claims: dict[str, Any]):
    """The service account whose Keycloak client got this token by the client-credentials
    grant, or None for a person's token.

    Keycloak names the client in `azp` (Keycloak 26 adds `client_id`, older ones `clientId`),
    and the token's user is the client's own `service-account-<client id>`, lowercased by
    Keycloak whatever the client id's case; RFC 9068 tokens name the client as their `sub`.
    A person's token from that client is never the service account. A client's own token that
    no service account names (or one that was deleted) raises NotAServiceAccount: it is no
    person either, and the account's deletion promised its tokens stop working."""
    client = str(claims.get("azp") or claims.get("client_id") or claims.get("clientId") or "")
    username = str(claims.get("preferred_username") or "").lower()
    marked = bool(client) and (
        username == f"{SERVICE_ACCOUNT_USER_PREFIX}{client}".lower()
        or claims.get("clientId") == client or claims.get("sub") == client
    )
    if not marked and not username.startswith(SERVICE_ACCOUNT_USER_PREFIX):
        return None
    account = service_account_for_client(client_id=client) if marked else None
    if account is None:
        raise NotAServiceAccount(client)
    return account


class KeycloakBearerAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <Keycloak access token>` for scripts and services.

    A JWT access token is checked locally against the realm (core.bearer: signature with the
    cached JWKS, issuer, OIDC_API_AUDIENCE, expiry); an opaque one through Keycloak's
    introspection, cached briefly. Its claims sync the user's roles and memberships like a
    sign-in does, once per token. Personal API tokens (afp_…) are handled by
    ApiTokenAuthentication before this.
    """

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        scheme, _, raw = header.partition(" ")
        raw = raw.strip()
        if scheme.lower() != "bearer" or not raw or " " in raw or not oidc_enabled():
            return None
        try:
            claims = bearer_token_claims(raw)
        except TokenRejected as exc:
            raise exceptions.AuthenticationFailed(f"Invalid Keycloak access token: {exc}") from exc
        except TokenInactive as exc:
            raise exceptions.AuthenticationFailed(
                "This Keycloak access token was revoked, or its session ended, in Keycloak."
            ) from exc
        except ProviderUnavailable as exc:
            logger.warning("Keycloak unreachable to verify a bearer token: %s", exc)
            raise ProviderUnavailableError() from exc
        try:
            account = _service_account_of(claims)
        except NotAServiceAccount as exc:
            raise exceptions.AuthenticationFailed(
                "This Keycloak client's tokens act as no portal service account: a platform "
                "admin links the client to one."
            ) from exc
        if account is not None:
            # A client-credentials token of a service account's Keycloak client: it acts as
            # that account, with the scopes the account gives it; no Keycloak sync.
            if account.disabled_at is not None or not account.user.is_active:
                raise exceptions.AuthenticationFailed("This service account is disabled.")
            service_account_note_keycloak_use(account=account)
            return account.user, ScopedClaims(claims, scopes=account.scopes)
        user = self._user_for(raw, claims)
        if not user.is_active:
            raise exceptions.AuthenticationFailed("This portal account is disabled.")
        return user, claims

    @staticmethod
    def _user_for(raw: str, claims: dict[str, Any]):
        # Sync once per token, not once per request: a token's claims never change.
        key = caching.key("oidc-bearer", hashlib.sha256(raw.encode()).hexdigest())
        user_id = caching.get("oidc-bearer", key)
        if user_id is not None:
            user = get_user_model().objects.filter(pk=user_id).first()
            if user is not None:
                return user
        try:
            user = _sync_user(claims)
        except SignInRejected as exc:
            raise exceptions.AuthenticationFailed("The access token names no user.") from exc
        expires = claims.get("exp") or time.time() + settings.OIDC_INTROSPECTION_CACHE_SECONDS
        caching.set("oidc-bearer", key, user.pk, max(1, int(expires - time.time())))
        return user

    def authenticate_header(self, request) -> str:
        return self.keyword


class KeycloakBearerAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = KeycloakBearerAuthentication
    name = "keycloakBearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "A Keycloak access token whose audience is the portal.",
        }
