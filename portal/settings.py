"""Settings for the AI Factory Portal, read from the environment only.

Defaults give the embedded demo (SQLite, eager Celery, simulated fleet, local accounts).
`PORTAL_ENV=production` turns on the production posture and refuses to start without
SECRET_KEY and ALLOWED_HOSTS. Every variable is listed in `.env.example` and docs/configuration.md.
"""

import os
from collections.abc import Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import environ
from celery.schedules import crontab

BASE_DIR = Path(__file__).resolve().parent.parent


class _SetVariables(Mapping):
    """The process environment without variables set to an empty string.

    `cp .env.example .env` leaves many variables empty: empty means "use the default", exactly
    as if the line were absent, never an empty broker URL or an empty list.
    """

    def __getitem__(self, name: str) -> str:
        value = os.environ[name]
        if value == "":
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name, value in os.environ.items() if value != "")

    def __len__(self) -> int:
        return sum(1 for value in os.environ.values() if value != "")


env = environ.Env()
env.ENVIRON = _SetVariables()

PORTAL_ENV = env.str("PORTAL_ENV", default="development")
if PORTAL_ENV not in {"development", "production"}:
    raise environ.ImproperlyConfigured("PORTAL_ENV must be 'development' or 'production'.")
PRODUCTION = PORTAL_ENV == "production"

# A development checkout keeps its secrets in .env (written once by `make demo`);
# production reads the real process environment only.
if not PRODUCTION and (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env")

SECRET_KEY = env.str("SECRET_KEY")
# Off unless a developer asks: with DEBUG on, a missing page shows Django's technical 404 (URL
# patterns, model names) instead of the portal's. Static files are served by WhiteNoise either way.
DEBUG = False if PRODUCTION else env.bool("DEBUG", default=False)
ALLOWED_HOSTS = (
    env.list("ALLOWED_HOSTS")
    if PRODUCTION
    else env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
CSRF_FAILURE_VIEW = "portal.views.csrf_failure"

INSTALLED_APPS = [
    "portal.apps.PortalAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "axes",
    "mozilla_django_oidc",
    "django_celery_beat",
    "django_prometheus",
    "portal.apps.PortalConfig",
    "inventory",
    "tenants",
    "billing",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "portal.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "portal.middleware.RequestInputGuardMiddleware",
    "tenants.identity.oidc.KeycloakSessionRefresh",
    "django.contrib.messages.middleware.MessageMiddleware",
    "portal.middleware.DeferredWorkMiddleware",
    "portal.middleware.DomainErrorMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

# Request bodies (less uploaded files) up to 8 MiB: the inventory import takes 5 MiB of text,
# which grows when sent escaped inside JSON or a form. Larger bodies are a 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = 8 * 2**20

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.portal",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
# Django's PostgreSQL backend, with timestamps read by psycopg's compiled loader (portal.db).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "portal.db.postgresql"
# The cache holds the API's throttle counters and the OIDC discovery and signing keys. Local
# memory counts per process; production points it at Redis so that every worker counts together.
# On Redis the cache fails open (portal.redis_cache): while Redis is down every read is a miss
# (the throttle lets requests through) and no request fails for it; a short connect and read
# timeout keeps a Redis that does not answer from holding requests.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    CACHES["default"]["BACKEND"] = "portal.redis_cache.FailOpenRedisCache"
    CACHES["default"].setdefault("OPTIONS", {})
    CACHES["default"]["OPTIONS"].setdefault("socket_connect_timeout", 0.5)
    CACHES["default"]["OPTIONS"].setdefault("socket_timeout", 1)
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Production keeps each worker's connection for a minute (opening one costs about 5 ms, a third
# of the lightest page), checked before a request reuses it so a dropped connection is replaced
# instead of failing the request. Development closes it after every request: runserver starts a
# thread per request, which a persistent connection would only leak.
DATABASES["default"].setdefault(
    "CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60 if PRODUCTION else 0)
)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Covering indexes (a workload's demand beside its tenant and status) are PostgreSQL's; the
# SQLite demo keeps their key columns only, which is all it needs.
SILENCED_SYSTEM_CHECKS = (
    ["models.W040"] if DATABASES["default"]["ENGINE"].endswith("sqlite3") else []
)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# A permission is granted when any backend grants it, asked in this order: the role backend
# answers a platform admin's checks (Django admin makes ~70 a page) from the roles already read
# for the request, before ModelBackend reads the user's and groups' permissions (two queries).
# It signs no one in (authenticate() is None), so sign-in is as before: axes first.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "tenants.access.PlatformRoleBackend",
    "django.contrib.auth.backends.ModelBackend",
    "tenants.identity.oidc.KeycloakBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
LOCAL_LOGIN_ENABLED = env.bool("LOCAL_LOGIN_ENABLED", default=True)

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
OIDC_AUTHENTICATE_CLASS = "tenants.identity.views.KeycloakSignInView"
OIDC_CALLBACK_CLASS = "tenants.identity.views.KeycloakCallbackView"
OIDC_OP_LOGOUT_URL_METHOD = "tenants.identity.oidc.provider_logout_url"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/failed/"
OIDC_EXEMPT_URLS = ["oidc-failed", "login", "logout", "healthz", "readyz", "metrics"]

# Failed sign-ins: lock a username+IP pair out after AXES_FAILURE_LIMIT tries.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_MINUTES", default=15) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True
# Dates as the portal's pages write them (2026-12-06 14:05), in Django admin too.
FORMAT_MODULE_PATH = ["portal.formats"]

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Outside production, serve straight from the source folders (no collectstatic needed).
WHITENOISE_USE_FINDERS = not PRODUCTION
WHITENOISE_AUTOREFRESH = not PRODUCTION
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "portal.static_storage.ManifestStaticStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# The ISO 4217 code every amount of money on the pages is shown in (budgets, invoices).
BILLING_CURRENCY = env.str("BILLING_CURRENCY", default="EUR")
# Tax charged on invoices, in percent of the discounted subtotal; empty: no tax (none shown).
_billing_tax = env.str("BILLING_TAX_PERCENT", default="")
try:
    BILLING_TAX_PERCENT = Decimal(_billing_tax) if _billing_tax.strip() else None
except ArithmeticError as _error:
    raise environ.ImproperlyConfigured("BILLING_TAX_PERCENT must be a number, e.g. 19.") from _error
if BILLING_TAX_PERCENT is not None and not (0 <= BILLING_TAX_PERCENT <= 100):
    raise environ.ImproperlyConfigured("BILLING_TAX_PERCENT must be between 0 and 100.")
# Days from an invoice's issue date to its due date.
BILLING_PAYMENT_TERMS_DAYS = env.int("BILLING_PAYMENT_TERMS_DAYS", default=30)

EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="portal@localhost")

# Celery: no broker configured means the demo's eager mode (tasks run in-process).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="memory://")
CELERY_TASK_ALWAYS_EAGER = env.bool(
    "CELERY_TASK_ALWAYS_EAGER", default=CELERY_BROKER_URL.startswith("memory://")
)
CELERY_TASK_EAGER_PROPAGATES = True
# An issued, paid or voided invoice's PDF, CSV and XLSX are rendered by a worker right after the
# decision, so that the first download is served from the kept file. Without a worker (eager
# mode) that rendering would run inside the request, about 80 ms per invoice of a bulk issue:
# there the files are rendered at their first download instead.
INVOICE_FILES_PRERENDER = env.bool("INVOICE_FILES_PRERENDER", default=not CELERY_TASK_ALWAYS_EAGER)
# An invoice list export of more invoices than this (per format) is written by a worker, not
# while its requester waits (about 5 s of writing each here); kept for INVOICE_EXPORT_KEEP_DAYS;
# a worker writes one for at most INVOICE_EXPORT_TIME_LIMIT seconds.
INVOICE_EXPORT_INLINE_MAX = {
    "csv": env.int("INVOICE_EXPORT_INLINE_MAX_CSV", default=20_000),
    "xlsx": env.int("INVOICE_EXPORT_INLINE_MAX_XLSX", default=2_000),
}
INVOICE_EXPORT_KEEP_DAYS = env.int("INVOICE_EXPORT_KEEP_DAYS", default=7)
INVOICE_EXPORT_TIME_LIMIT = env.int("INVOICE_EXPORT_TIME_LIMIT", default=1800)
if min(INVOICE_EXPORT_INLINE_MAX.values()) < 0 or INVOICE_EXPORT_KEEP_DAYS < 1:
    raise environ.ImproperlyConfigured(
        "INVOICE_EXPORT_INLINE_MAX_* must be 0 or more and INVOICE_EXPORT_KEEP_DAYS at least 1."
    )
if INVOICE_EXPORT_TIME_LIMIT < 60:
    raise environ.ImproperlyConfigured("INVOICE_EXPORT_TIME_LIMIT must be at least 60 seconds.")
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=None)
# The queue tasks go to (and workers read when started without -Q).
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="celery")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A message a worker took but never acknowledged (the worker was killed mid-task) goes back to
# the queue this long after it was delivered; workers look for such messages every 10 s, so a
# killed worker's work resumes within two minutes. Redis would also hand a message that a live
# worker still holds to a second one after this long, so it must outlast the longest a worker
# holds one: the longest retry delay (a retried task waits in the worker) plus the longest run.
BROKER_VISIBILITY_TIMEOUT = env.int("CELERY_VISIBILITY_TIMEOUT", default=100)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=60)
CELERY_TASK_SOFT_TIME_LIMIT = max(1, CELERY_TASK_TIME_LIMIT - 5)
# The longest delay between two tries of a failed task (exponential backoff up to here); past
# its retries a task's work is picked up again by the periodic sweeps.
TASK_RETRY_BACKOFF_MAX = env.int("CELERY_RETRY_BACKOFF_MAX", default=30)
if BROKER_VISIBILITY_TIMEOUT <= CELERY_TASK_TIME_LIMIT + TASK_RETRY_BACKOFF_MAX:
    raise environ.ImproperlyConfigured(
        "CELERY_VISIBILITY_TIMEOUT must exceed CELERY_TASK_TIME_LIMIT + CELERY_RETRY_BACKOFF_MAX: "
        "Redis would hand a task that a worker still holds to a second worker."
    )
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 3,
    "socket_timeout": 5,
    "visibility_timeout": BROKER_VISIBILITY_TIMEOUT,
    "unacked_restore_interval": 10,
    "unacked_restore_throttle": 1,
}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"socket_connect_timeout": 3, "socket_timeout": 5}
# Publishing never holds a web request for long when the broker is down: one quick retry, then
# the caller records the work as pending and the sweeps queue it again (portal.queueing).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 0.5,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 3
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE: dict = {
    "clear-expired-sessions": {"task": "portal.tasks.clear_expired_sessions", "schedule": 86400.0},
    # Level-triggered tenant enforcement: retries failed applies and repairs drift.
    "tenants-reconcile-sweep": {
        "task": "tenants.enforcement.tasks.tenants_reconcile_sweep_task",
        "schedule": env.float("TENANT_RECONCILE_SWEEP_SECONDS", default=300.0),
    },
    "quota-grants-sweep": {
        "task": "tenants.quota.tasks.quota_grants_sweep_task",
        "schedule": 3600.0,
    },
    # Workloads: watch what is live, re-queue what is not applied yet or still deleting.
    "workloads-observe-sweep": {
        "task": "tenants.workloads.tasks.workloads_observe_sweep_task",
        "schedule": env.float("WORKLOAD_OBSERVE_SECONDS", default=15.0),
    },
    "workloads-reconcile-sweep": {
        "task": "tenants.workloads.tasks.workloads_reconcile_sweep_task",
        "schedule": env.float("WORKLOAD_RECONCILE_SWEEP_SECONDS", default=120.0),
    },
    # Mail waiting in the outbox (the broker was down, or the mail server refused it).
    "outbox-sweep": {
        "task": "portal.tasks.outbox_sweep_task",
        "schedule": env.float("OUTBOX_SWEEP_SECONDS", default=60.0),
    },
}
CELERY_TIMEZONE = TIME_ZONE
# Queued whenever a worker starts (portal.celery), so that nothing waits a full period.
SWEEPS_AT_WORKER_START = [
    "tenants.enforcement.tasks.tenants_reconcile_sweep_task",
    "tenants.workloads.tasks.workloads_reconcile_sweep_task",
    "portal.tasks.outbox_sweep_task",
    "inventory.tasks.cluster_sync_task",
    "billing.tasks.invoice_exports_sweep_task",
]

# The fleet: "simulated" (demo, state in the database) or "kubernetes" (official client).
FLEET_BACKEND = env.str("FLEET_BACKEND", default="simulated")
if FLEET_BACKEND not in {"simulated", "kubernetes"}:
    raise environ.ImproperlyConfigured("FLEET_BACKEND must be 'simulated' or 'kubernetes'.")
FLEET_KUBECONFIG = env.str("KUBECONFIG", default="")
FLEET_KUBE_CONTEXT = env.str("KUBE_CONTEXT", default="")
FLEET_REQUEST_TIMEOUT = env.float("FLEET_REQUEST_TIMEOUT", default=15.0)
FLEET_FIELD_MANAGER = env.str("FLEET_FIELD_MANAGER", default="ai-factory-portal")
FLEET_SIMULATED_READY_SECONDS = env.float("FLEET_SIMULATED_READY_SECONDS", default=20.0)

# Tenants on the cluster: who may reach a tenant's pods, and what its Keycloak group may do.
TENANT_INGRESS_NAMESPACE = env.str("TENANT_INGRESS_NAMESPACE", default="ingress-gateway")
TENANT_EDIT_CLUSTER_ROLE = env.str("TENANT_EDIT_CLUSTER_ROLE", default="edit")
# The API server's --oidc-groups-prefix: Keycloak group "/tenants/x/member" is
# "oidc:/tenants/x/member" in RBAC (the tenant's RoleBindings name these groups).
KUBERNETES_OIDC_GROUPS_PREFIX = env.str("KUBERNETES_OIDC_GROUPS_PREFIX", default="oidc:")
# The cluster's DNS domain: in-cluster addresses of workloads (<svc>.<ns>.svc.<domain>).
KUBERNETES_CLUSTER_DOMAIN = env.str("KUBERNETES_CLUSTER_DOMAIN", default="cluster.local")
# Where people reach the portal: links in e-mails are absolute.
PORTAL_URL = env.str("PORTAL_URL", default="http://127.0.0.1:8000").rstrip("/")
# The benchmark's floor page, /bench/floor/ (`make bench` turns it on for its own server only).
BENCH_FLOOR_ENABLED = env.bool("BENCH_FLOOR_ENABLED", default=False)
# Temporary quota grants: remind the tenant this many days before the end date.
QUOTA_GRANT_REMINDER_DAYS = env.int("QUOTA_GRANT_REMINDER_DAYS", default=7)

PROMETHEUS_URL = env.str("PROMETHEUS_URL", default="")
PROMETHEUS_TIMEOUT = env.float("PROMETHEUS_TIMEOUT", default=5.0)

# Fleet health: how often the cluster is read and DCGM signals are ingested, how far back a
# finding counts, and the remediation policy (a severity, or "off"): cordon the Kubernetes
# node at REMEDIATION_CORDON_AT or worse, drain it to maintenance at REMEDIATION_DRAIN_AT.
INVENTORY_SYNC_INTERVAL = env.int("INVENTORY_SYNC_INTERVAL", default=300)
HEALTH_INGEST_INTERVAL = env.int("HEALTH_INGEST_INTERVAL", default=60)
HEALTH_LOOKBACK_MINUTES = env.int("HEALTH_LOOKBACK_MINUTES", default=10)
REMEDIATION_CORDON_AT = env.str("REMEDIATION_CORDON_AT", default="warning")
REMEDIATION_DRAIN_AT = env.str("REMEDIATION_DRAIN_AT", default="critical")
for _name in ("REMEDIATION_CORDON_AT", "REMEDIATION_DRAIN_AT"):
    if vars()[_name] not in {"info", "warning", "critical", "off"}:
        raise environ.ImproperlyConfigured(f"{_name} must be info, warning, critical or off.")
# XIDs that mean the GPU needs a reset or repair (ECC, fallen off the bus, NVLink, GSP).
REMEDIATION_CRITICAL_XIDS = env.list(
    "REMEDIATION_CRITICAL_XIDS", cast=int, default=[48, 63, 64, 74, 79, 92, 94, 95, 119, 120]
)
CELERY_BEAT_SCHEDULE |= {
    "inventory-cluster-sync": {
        "task": "inventory.tasks.cluster_sync_task",
        "schedule": float(INVENTORY_SYNC_INTERVAL),
    },
    "inventory-health-ingest": {
        "task": "inventory.tasks.health_ingest_task",
        "schedule": float(HEALTH_INGEST_INTERVAL),
    },
}
PROMETHEUS_EXPORT_MIGRATIONS = False
# Who may read /metrics and the details of /readyz: a scraper presenting this bearer token, or
# a direct peer (REMOTE_ADDR, never a forwarded address) in one of these networks. Signed-in
# platform admins also see /readyz's details. Everyone else gets 403 from /metrics and only the
# status from /readyz.
METRICS_BEARER_TOKEN = env.str("METRICS_BEARER_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = env.list(
    "METRICS_ALLOWED_NETWORKS", default=[] if PRODUCTION else ["127.0.0.1/32", "::1/128"]
)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.api.authentication.ApiTokenAuthentication",
        "tenants.identity.oidc.KeycloakBearerAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "portal.api.parsers.PortalJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "portal.api.pagination.PortalPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "portal.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + ([] if PRODUCTION else ["rest_framework.renderers.BrowsableAPIRenderer"]),
    # Per signed-in user, and per anonymous client address (REMOTE_ADDR, or the address
    # TRUSTED_PROXY_COUNT proxies in front of the portal put into X-Forwarded-For): JSON 429.
    "DEFAULT_THROTTLE_CLASSES": [
        "portal.api.throttling.PortalAnonThrottle",
        "portal.api.throttling.PortalUserThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "user": env.str("API_THROTTLE_USER_RATE", default="6000/hour"),
        "anon": env.str("API_THROTTLE_ANON_RATE", default="600/hour"),
    },
    "NUM_PROXIES": env.int("TRUSTED_PROXY_COUNT", default=0),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "AI Factory Portal API",
    "DESCRIPTION": "Quota, workloads, inventory and billing of the shared GPU fleet.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api.schema.document_error_responses",
    ],
}
# Choice sets of different models share field names (kind, role, source, state): name each.
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] = {
    "NodeStateEnum": "inventory.models.node.NodeState",
    "NodeRoleEnum": "inventory.models.node.NodeRole",
    "BiosProfileEnum": "inventory.models.node.BiosProfile",
    "GpuSharingEnum": "inventory.models.node.GpuSharing",
    "ValidationKindEnum": "inventory.models.node.ValidationKind",
    "GpuHealthEnum": "inventory.models.device.GpuHealth",
    "NicKindEnum": "inventory.models.device.NicKind",
    "HealthEventKindEnum": "inventory.models.health.HealthEventKind",
    "HealthEventSourceEnum": "inventory.models.health.HealthEventSource",
    "HealthEventRemediationEnum": "inventory.models.health.HealthEventRemediation",
    "SeverityEnum": "inventory.models.health.Severity",
    "MembershipRoleEnum": "tenants.access.models.Membership.Role",
    "MembershipSourceEnum": "tenants.access.models.Source",
    "QuotaRequestStatusEnum": "tenants.quota.models.QuotaRequestStatus",
    "TenantIsolationEnum": "tenants.access.models.Tenant.Isolation",
    "TenantStatusEnum": "tenants.access.models.Tenant.Status",
    "WorkloadStatusEnum": "tenants.workloads.models.WorkloadStatus",
    "WorkloadKindEnum": "tenants.workloads.registry.CHOICES",
    "WorkloadEventKindEnum": "tenants.workloads.models.WorkloadEvent.Kind",
    "WorkloadPowerActionEnum": "tenants.workloads.kinds.vm.spec.POWER_ACTIONS",
}
# Billing's invoice API (finance): the invoice's status.
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]["InvoiceStatusEnum"] = "billing.models.InvoiceStatus"

SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=8 * 3600)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if PRODUCTION:
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Probes and an in-cluster scraper speak plain HTTP to the pod. /metrics answers only a
    # peer in METRICS_ALLOWED_NETWORKS over it; its bearer token is taken over HTTPS only.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "filters": {"forbidden_in_one_line": {"()": "portal.log_filters.ForbiddenInOneLine"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "axes": {"level": "WARNING"},
        # A 403 is one line ("Forbidden (Permission denied): /path"), not a traceback.
        "django.request": {"filters": ["forbidden_in_one_line"]},
        # Eager mode (the demo) runs every task in the web process: a line per task, and
        # kombu's note about the in-memory broker, would bury what the demo prints.
        **(
            {"celery.app.trace": {"level": "WARNING"}, "kombu.connection": {"level": "ERROR"}}
            if CELERY_TASK_ALWAYS_EAGER
            else {}
        ),
    },
}

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
# Ask Keycloak (token introspection) on every API request whether a bearer access token is
# still active, so that one revoked in Keycloak is refused at once rather than at its expiry.
OIDC_INTROSPECT_ACCESS_TOKENS = env.bool("OIDC_INTROSPECT_ACCESS_TOKENS", default=True)

# Metering (issue 12): every closed UTC hour is metered from the workloads' histories
# (allocated) and, with PROMETHEUS_URL, from DCGM series (measured), at METERING_MINUTE past
# each hour. Hours not done in an open billing period (last month, older months with a draft
# invoice) or within the look-back (never metered, or gaps while Prometheus was down) are
# metered by the next run: every allocated hour, at most METERING_MAX_WINDOWS_PER_RUN measured
# windows at a time (docs/billing.md).
METERING_LOOKBACK_HOURS = env.int("METERING_LOOKBACK_HOURS", default=48)
METERING_MAX_WINDOWS_PER_RUN = env.int("METERING_MAX_WINDOWS_PER_RUN", default=24)
METERING_MINUTE = env.int("METERING_MINUTE", default=5)
# Nothing before this instant is metered (ISO 8601, e.g. 2026-01-01T00:00:00Z); empty: no limit.
METERING_START = env.str("METERING_START", default="")
# The PromQL subquery step: at least the DCGM exporter's (and OpenCost's) scrape interval.
METERING_STEP_SECONDS = env.int("METERING_STEP_SECONDS", default=30)
# Flag an hour where OpenCost's GPU-seconds of a tenant differ more than this from the portal's.
METERING_OPENCOST_THRESHOLD_PERCENT = Decimal(
    env.str("METERING_OPENCOST_THRESHOLD_PERCENT", default="10")
)
try:
    METERING_START = datetime.fromisoformat(METERING_START) if METERING_START else None
except ValueError:
    raise environ.ImproperlyConfigured(
        "METERING_START must be an ISO 8601 date and time, e.g. 2026-01-01T00:00:00Z."
    ) from None
if METERING_START is not None and METERING_START.tzinfo is None:
    raise environ.ImproperlyConfigured("METERING_START needs its time zone, e.g. a final Z.")
if not 0 <= METERING_MINUTE <= 59:
    raise environ.ImproperlyConfigured("METERING_MINUTE must be 0 to 59.")
if METERING_STEP_SECONDS < 1 or 3600 % METERING_STEP_SECONDS:
    raise environ.ImproperlyConfigured("METERING_STEP_SECONDS must divide an hour (15, 30, 60…).")
if METERING_LOOKBACK_HOURS < 1 or METERING_MAX_WINDOWS_PER_RUN < 1:
    raise environ.ImproperlyConfigured(
        "METERING_LOOKBACK_HOURS and METERING_MAX_WINDOWS_PER_RUN must be at least 1."
    )
CELERY_BEAT_SCHEDULE |= {
    "billing-meter-hourly": {
        "task": "billing.tasks.usage_meter_sweep_task",
        "schedule": crontab(minute=METERING_MINUTE),
    },
}

# Billing (invoices and budgets): drafts for the month just ended once its last hours are
# metered, and budget alerts every hour.
CELERY_BEAT_SCHEDULE |= {
    "billing-invoices-month-end": {
        "task": "billing.tasks.invoices_month_end_task",
        "schedule": crontab(minute=0, hour=3, day_of_month=1),
    },
    "billing-budget-alerts-hourly": {
        "task": "billing.tasks.budget_alerts_task",
        "schedule": crontab(minute=20),
    },
    "billing-invoice-exports-sweep": {
        "task": "billing.tasks.invoice_exports_sweep_task",
        "schedule": 300.0,
    },
}
