"""Sign-in with Keycloak (OpenID Connect), lock-out of failed sign-ins, the Keycloak directory
sync and API token lifetimes."""

import environ

from .base import CELERY_BEAT_SCHEDULE, env

# Sign-in with Keycloak (OpenID Connect, mozilla-django-oidc). Off until OIDC_ISSUER_URL (the
# realm URL, e.g. https://sso.example.com/realms/ai-factory) and the client are set. Endpoints
# come from the realm's discovery document (cached); an OIDC_OP_* endpoint set here wins, and
# with all of authorization, token, userinfo and JWKS set no discovery request is made.
OIDC_ISSUER_URL = env.str("OIDC_ISSUER_URL", default="").rstrip("/")
OIDC_OP_AUTHORIZATION_ENDPOINT = env.str("OIDC_OP_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env.str("OIDC_OP_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env.str("OIDC_OP_USER_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env.str("OIDC_OP_JWKS_ENDPOINT", default="")
OIDC_OP_LOGOUT_ENDPOINT = env.str("OIDC_OP_LOGOUT_ENDPOINT", default="")
OIDC_RP_CLIENT_ID = env.str("OIDC_RP_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env.str("OIDC_RP_CLIENT_SECRET", default="")
_oidc_parts = [OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_TOKEN_ENDPOINT, OIDC_OP_USER_ENDPOINT]
if not OIDC_ISSUER_URL and any([*_oidc_parts, OIDC_OP_JWKS_ENDPOINT, OIDC_RP_CLIENT_ID]):
    raise environ.ImproperlyConfigured(
        "OIDC_ISSUER_URL is required with any OIDC_* setting: tokens are checked against it."
    )
if OIDC_ISSUER_URL and not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
    raise environ.ImproperlyConfigured(
        "OIDC_ISSUER_URL needs OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET (the portal's client)."
    )
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_RP_SCOPES = env.str("OIDC_RP_SCOPES", default="openid email profile")
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_USE_NONCE = True
OIDC_STORE_ID_TOKEN = True  # sent back as id_token_hint when signing out of Keycloak
OIDC_CREATE_USER = True
OIDC_VERIFY_SSL = True  # a private CA goes into REQUESTS_CA_BUNDLE, never verification off
OIDC_TIMEOUT = env.float("OIDC_TIMEOUT", default=10.0)
# Seconds of clock difference tolerated between the portal and Keycloak (exp, iat, nbf).
OIDC_CLOCK_LEEWAY = env.int("OIDC_CLOCK_LEEWAY", default=30)
OIDC_DISCOVERY_CACHE_SECONDS = env.int("OIDC_DISCOVERY_CACHE_SECONDS", default=3600)
OIDC_JWKS_CACHE_SECONDS = env.int("OIDC_JWKS_CACHE_SECONDS", default=3600)
# A Keycloak session is re-checked (prompt=none) this often: a user disabled in Keycloak loses
# the portal within this time. Keycloak's access token lifespan (5 minutes) is a good value.
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env.int("OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS", default=300)
# Claims -> access: realm or portal-client roles named here grant the platform roles; groups
# <OIDC_GROUP_PREFIX><tenant slug>/<owner|member|viewer> grant tenant memberships.
OIDC_ROLE_PLATFORM_ADMIN = env.list("OIDC_ROLE_PLATFORM_ADMIN", default=["platform-admin"])
OIDC_ROLE_FINANCE = env.list("OIDC_ROLE_FINANCE", default=["finance"])
OIDC_GROUP_PREFIX = env.str("OIDC_GROUP_PREFIX", default="/tenants/")
# Bearer access tokens for the API must name this audience (Keycloak's audience mapper).
OIDC_API_AUDIENCE = env.str("OIDC_API_AUDIENCE", default="") or OIDC_RP_CLIENT_ID
# The public client portalctl signs in with, published with the issuer for it to find.
OIDC_CLI_CLIENT_ID = env.str("OIDC_CLI_CLIENT_ID", default="portal-cli")
OIDC_AUTHENTICATE_CLASS = "tenants.identity.views.KeycloakSignInView"
OIDC_CALLBACK_CLASS = "tenants.identity.views.KeycloakCallbackView"
OIDC_OP_LOGOUT_URL_METHOD = "tenants.identity.oidc.provider_logout_url"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/failed/"
OIDC_EXEMPT_URLS = ["oidc-failed", "login", "logout", "healthz", "readyz", "metrics",
                    "cli-discovery"]

# Failed sign-ins: lock a username+IP pair out after AXES_FAILURE_LIMIT tries.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_MINUTES", default=15) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# Keycloak directory sync and personal API token lifetime (issue 8). Claims arrive only at
# sign-in, so a periodic pull through Keycloak's Admin REST API (a confidential client with a
# service account holding realm-management's view-users and query-groups) keeps memberships and
# roles in step and deactivates users disabled or deleted there. Off while the client is unset.
KEYCLOAK_DIRECTORY_CLIENT_ID = env.str("KEYCLOAK_DIRECTORY_CLIENT_ID", default="")
KEYCLOAK_DIRECTORY_CLIENT_SECRET = env.str("KEYCLOAK_DIRECTORY_CLIENT_SECRET", default="")
KEYCLOAK_DIRECTORY_SYNC_SECONDS = env.int("KEYCLOAK_DIRECTORY_SYNC_SECONDS", default=300)
# One sync may run this long (its Celery time limit; its reads get all but a minute of it) and
# reads this many Admin REST calls at a time: a Keycloak answering in seconds per call still
# completes a sync. Shorter than the interval, so that two runs never overlap.
KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT = env.int("KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT", default=240)
KEYCLOAK_DIRECTORY_CONCURRENCY = env.int("KEYCLOAK_DIRECTORY_CONCURRENCY", default=8)
# A run that runs out of time keeps what it read and the next resumes it; a read begun longer ago
# than this starts over, so that no answer acted upon is older than this (docs/keycloak.md).
KEYCLOAK_DIRECTORY_READ_MAX_AGE = env.int("KEYCLOAK_DIRECTORY_READ_MAX_AGE", default=3600)
if KEYCLOAK_DIRECTORY_READ_MAX_AGE < 2 * KEYCLOAK_DIRECTORY_SYNC_SECONDS:
    raise environ.ImproperlyConfigured(
        "KEYCLOAK_DIRECTORY_READ_MAX_AGE must be at least two KEYCLOAK_DIRECTORY_SYNC_SECONDS "
        "(a read must be able to span more than one run)."
    )
if not 70 <= KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT < KEYCLOAK_DIRECTORY_SYNC_SECONDS:
    raise environ.ImproperlyConfigured(
        "KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT must be at least 70 seconds and shorter than "
        "KEYCLOAK_DIRECTORY_SYNC_SECONDS (two syncs must not overlap)."
    )
if not 1 <= KEYCLOAK_DIRECTORY_CONCURRENCY <= 32:
    raise environ.ImproperlyConfigured("KEYCLOAK_DIRECTORY_CONCURRENCY must be 1 to 32.")
if KEYCLOAK_DIRECTORY_CLIENT_ID and not (OIDC_ISSUER_URL and KEYCLOAK_DIRECTORY_CLIENT_SECRET):
    raise environ.ImproperlyConfigured(
        "KEYCLOAK_DIRECTORY_CLIENT_ID needs OIDC_ISSUER_URL and KEYCLOAK_DIRECTORY_CLIENT_SECRET."
    )
CELERY_BEAT_SCHEDULE |= {
    "keycloak-directory-sync": {
        "task": "tenants.identity.tasks.keycloak_directory_sync_task",
        "schedule": float(KEYCLOAK_DIRECTORY_SYNC_SECONDS),
    },
}
# A personal API token lives at most this long (older tokens stop working, longer are refused).
API_TOKEN_MAX_LIFETIME_DAYS = env.int("API_TOKEN_MAX_LIFETIME_DAYS", default=90)
# JWT access tokens are checked locally (core.bearer); this also asks Keycloak whether one is
# still active, so a revoked token is refused within OIDC_INTROSPECTION_CACHE_SECONDS.
OIDC_INTROSPECT_ACCESS_TOKENS = env.bool("OIDC_INTROSPECT_ACCESS_TOKENS", default=False)
# How long an introspection answer is kept (never past the token's own expiry).
OIDC_INTROSPECTION_CACHE_SECONDS = env.int("OIDC_INTROSPECTION_CACHE_SECONDS", default=60)
