"""Core settings: Django, the database, cache, sign-in, static files, Celery and logging.

Defaults give the embedded demo (SQLite, eager Celery, simulated fleet, local accounts).
`PORTAL_ENV=production` turns on the production posture and refuses to start without
SECRET_KEY and ALLOWED_HOSTS. Every variable read here is declared in portal/config_vars.py, from
which docs/configuration.md's table and .env.example are written (manage.py config_reference).
"""

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent


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
# prometheus_client takes this variable's presence, even empty, for multiprocess mode (and
# would write its files to the working directory): empty means unset here, as everywhere.
if os.environ.get("PROMETHEUS_MULTIPROC_DIR") == "":
    del os.environ["PROMETHEUS_MULTIPROC_DIR"]

SECRET_KEY = env.str("SECRET_KEY")
# Fernet keys for what is sealed at rest (core/sealed.py); development derives one.
# `check --deploy` requires them (core/checks.py).
SEALING_KEYS = env.list("SEALING_KEYS", default=[])
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
    "core.apps.CoreConfig",
    "portal.apps.WiringConfig",
    "inventory",
    "tenants",
    "billing",
    # Development packages: the demo's data and simulated fleet. Production never installs them.
    *([] if PRODUCTION else ["demo"]),
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "core.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "core.middleware.RequestInputGuardMiddleware",
    "tenants.identity.oidc.KeycloakSessionRefresh",
    "django.contrib.messages.middleware.MessageMiddleware",
    "core.middleware.DeferredWorkMiddleware",
    "core.middleware.DomainErrorMiddleware",
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
# Django's PostgreSQL backend, with timestamps read by psycopg's compiled loader (core.db).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "core.db.postgresql"
# The cache holds the API's throttle counters and the OIDC discovery and signing keys. Local
# memory counts per process; production points it at Redis so that every worker counts together.
# On Redis the cache fails open (core.redis_cache): while Redis is down every read is a miss
# (the throttle lets requests through) and no request fails for it; a short connect and read
# timeout keeps a Redis that does not answer from holding requests.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    CACHES["default"]["BACKEND"] = "core.redis_cache.FailOpenRedisCache"
    CACHES["default"].setdefault("OPTIONS", {})
    CACHES["default"]["OPTIONS"].setdefault("socket_connect_timeout", 0.5)
    CACHES["default"]["OPTIONS"].setdefault("socket_timeout", 1)
    # `?key_prefix=` (`timeout`, `version`) in the URL: django-environ writes these in lower
    # case for Django's Redis backend, which reads only the upper-case settings.
    for name in ("key_prefix", "timeout", "version"):
        if name in CACHES["default"]:
            CACHES["default"][name.upper()] = CACHES["default"].pop(name)
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Production keeps each worker's connection for a minute (opening one costs a good part of a
# light page), checked before a request reuses it so a dropped connection is replaced
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
    "tenants.access.rules.ServiceAccountSignInRefused",
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

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True
# Dates as the portal's pages write them (2026-12-06 14:05), in Django admin too.
FORMAT_MODULE_PATH = ["core.formats"]

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
            "core.static_storage.ManifestStaticStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="portal@localhost")

# Celery: no broker configured means the demo's eager mode (tasks run in-process).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="memory://")
CELERY_TASK_ALWAYS_EAGER = env.bool(
    "CELERY_TASK_ALWAYS_EAGER", default=CELERY_BROKER_URL.startswith("memory://")
)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=None)
# The queue tasks go to (and workers read when started without -Q).
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="celery")
# Each cluster's reconcile work goes to a queue of its own: this prefix and the cluster's slug.
CELERY_CLUSTER_QUEUE_PREFIX = "cluster."
# The clusters whose queues a worker serves besides its own ("*": all in service at its start).
CELERY_WORKER_CLUSTERS = env.list("CELERY_WORKER_CLUSTERS", default=["*"])
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
# the caller records the work as pending and the sweeps queue it again (core.queueing).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 0.5,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 3
# A worker logs through the handler above (LOG_FORMAT, the request id of the task's request)
# instead of replacing it with Celery's own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# django-celery-beat's scheduler behind beat's own lock in Redis (core.beat_lock): one beat sends.
CELERY_BEAT_SCHEDULER = "core.beat_lock:LockedDatabaseScheduler"
BEAT_LOCK_TTL_SECONDS = env.int("BEAT_LOCK_TTL_SECONDS", default=30)
# Beat writes each entry's last run to its table after every task it sends (not every three
# minutes): /metrics reads it there (portal_beat_last_run_timestamp_seconds).
CELERY_BEAT_SYNC_EVERY = 1
CELERY_BEAT_SCHEDULE: dict = {
    "clear-expired-sessions": {"task": "portal.tasks.clear_expired_sessions", "schedule": 86400.0},
    # Level-triggered tenant enforcement: retries failed applies and repairs drift.
    "tenants-reconcile-sweep": {
        "task": "tenants.enforcement.tasks.tenants_reconcile_sweep_task",
        "schedule": env.float("TENANT_RECONCILE_SWEEP_SECONDS", default=300.0),
    },
    # Model credentials synced as Secrets into tenants' namespaces (and pruned when deleted).
    "credentials-reconcile-sweep": {
        "task": "tenants.credentials.tasks.credentials_reconcile_sweep_task",
        "schedule": env.float("CREDENTIALS_RECONCILE_SWEEP_SECONDS", default=300.0),
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
    # Idle GPUs: measure every workload's, warn and act where its tenant's policy says.
    "workloads-idle-sweep": {
        "task": "tenants.workloads.tasks.workloads_idle_sweep_task",
        "schedule": env.float("IDLE_GPU_SWEEP_SECONDS", default=300.0),
    },
    # Mail waiting in the outbox (the broker was down, or the mail server refused it).
    "outbox-sweep": {
        "task": "portal.tasks.outbox_sweep_task",
        "schedule": env.float("OUTBOX_SWEEP_SECONDS", default=60.0),
    },
    # Webhook deliveries that are due (retries, or the broker was down when they were owed).
    "webhook-deliveries-sweep": {
        "task": "tenants.webhooks.tasks.webhook_deliveries_sweep_task",
        "schedule": env.float("WEBHOOK_SWEEP_SECONDS", default=30.0),
    },
}
CELERY_TIMEZONE = TIME_ZONE
# Queued whenever a worker starts (portal.celery), so that nothing waits a full period.
SWEEPS_AT_WORKER_START = [
    "tenants.enforcement.tasks.tenants_reconcile_sweep_task",
    "tenants.credentials.tasks.credentials_reconcile_sweep_task",
    "tenants.workloads.tasks.workloads_reconcile_sweep_task",
    "portal.tasks.outbox_sweep_task",
    "tenants.webhooks.tasks.webhook_deliveries_sweep_task",
    "inventory.tasks.clusters_sync_sweep_task",
    "billing.tasks.invoice_exports_sweep_task",
]

# Idle GPUs (docs/idle-gpus.md): the fleet's defaults of each tenant's policy. Opt-in: "off"
# shows idle GPUs and does nothing; "warn" mails the owners; "act" warns, then after the grace
# period scales an endpoint to its minimum, stops a VM, or removes a Slurm cluster's idle workers.
IDLE_GPU_MODE = env.str("IDLE_GPU_MODE", default="off")
if IDLE_GPU_MODE not in {"off", "warn", "act"}:
    raise environ.ImproperlyConfigured("IDLE_GPU_MODE must be off, warn or act.")
IDLE_GPU_THRESHOLD_PERCENT = env.int("IDLE_GPU_THRESHOLD_PERCENT", default=5)
IDLE_GPU_WINDOW_MINUTES = env.int("IDLE_GPU_WINDOW_MINUTES", default=60)
IDLE_GPU_GRACE_MINUTES = env.int("IDLE_GPU_GRACE_MINUTES", default=60)

# Webhooks (docs/webhooks.md): how long a receiver has to answer, how often a delivery is tried
# (doubling from 30 s up to the cap), and after how many failures in a row, lasting how long, a
# hook is disabled.
# Plain HTTP to 127.0.0.1/localhost only for tests and the demo: otherwise HTTPS to public
# addresses only.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
WEBHOOK_MAX_ATTEMPTS = env.int("WEBHOOK_MAX_ATTEMPTS", default=10)
WEBHOOK_RETRY_MAX_SECONDS = env.int("WEBHOOK_RETRY_MAX_SECONDS", default=21600)
WEBHOOK_DISABLE_AFTER_FAILURES = env.int("WEBHOOK_DISABLE_AFTER_FAILURES", default=15)
WEBHOOK_DISABLE_AFTER_HOURS = env.float("WEBHOOK_DISABLE_AFTER_HOURS", default=24.0)
WEBHOOK_ALLOW_INSECURE_LOCALHOST = env.bool("WEBHOOK_ALLOW_INSECURE_LOCALHOST", default=False)
if PRODUCTION and WEBHOOK_ALLOW_INSECURE_LOCALHOST:
    raise environ.ImproperlyConfigured("WEBHOOK_ALLOW_INSECURE_LOCALHOST is for tests, the demo.")

# Where people reach the portal: links in e-mails are absolute.
PORTAL_URL = env.str("PORTAL_URL", default="http://127.0.0.1:8000").rstrip("/")
# Temporary quota grants: remind the tenant this many days before the end date.
QUOTA_GRANT_REMINDER_DAYS = env.int("QUOTA_GRANT_REMINDER_DAYS", default=7)

SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=8 * 3600)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# gunicorn's workers write their metrics here and /metrics sums them (portal/gunicorn_conf.py);
# prometheus_client reads the variable itself, from the environment, when it starts.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")

# Tracing (core.tracing): off unless a collector's OTLP/HTTP endpoint is named.
OTEL_EXPORTER_OTLP_ENDPOINT = env.str("OTEL_EXPORTER_OTLP_ENDPOINT", default="")
OTEL_SERVICE_NAME = env.str("OTEL_SERVICE_NAME", default="ai-factory-portal")

# `json`: one JSON object a line on stdout (time, level, logger, message, request_id, user,
# tenant, exc_info), for a log collector; `text`: a line a person reads, on stderr.
LOG_FORMAT = env.str("LOG_FORMAT", default="json" if PRODUCTION else "text")
if LOG_FORMAT not in {"json", "text"}:
    raise environ.ImproperlyConfigured("LOG_FORMAT must be 'json' or 'text'.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": ["asctime", "levelname", "name", "message"],
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "filters": {
        "forbidden_in_one_line": {"()": "core.log_filters.ForbiddenInOneLine"},
        "request_context": {"()": "core.log_context.RequestContextFilter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["request_context"],
            **(
                {"formatter": "json", "stream": "ext://sys.stdout"}
                if LOG_FORMAT == "json"
                else {"formatter": "plain"}
            ),
        }
    },
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
