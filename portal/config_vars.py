"""Every environment variable the portal reads, declared once: name, default, meaning.

The settings package (portal/settings/) reads each one with django-environ where it is used.
From these declarations `python manage.py config_reference` writes the reference table of
docs/configuration.md and the whole of .env.example (portal/config_files.py);
tests/portal/test_configuration.py fails when a variable settings read is not declared here (or
one declared here is not read), when a declared default is not the one settings use, and when
either file is not what the declarations write.
"""

from .config_var_types import Section, Var
from .config_vars_workloads import NOTEBOOKS, REMOTE_ACCESS

__all__ = ["SECTIONS", "Section", "Var", "declared"]


SECTIONS = (
    Section(
        "Mode and secrets",
        "",
        (
            Var("PORTAL_ENV", "development",
                "`production` turns on the production posture: `DEBUG` off, secure cookies, HSTS, "
                "HTTPS redirect, manifest static files; refuses to start without `SECRET_KEY` and "
                "`ALLOWED_HOSTS`"),
            Var("SECRET_KEY", "",
                "Django's signing key; `make demo` writes a random one into `.env`",
                shown="— (required)", example="change-me-to-a-long-random-string"),
            Var("DEBUG", "false",
                "`true` shows Django's technical error pages (tracebacks, URL patterns) instead of "
                "the portal's; development only, production forces it off"),
            Var("SEALING_KEYS", "",
                "comma-separated Fernet keys (`python -c \"from cryptography.fernet import "
                "Fernet; print(Fernet.generate_key().decode())\"`) that encrypt what the portal "
                "must keep but never show (tenants' model credentials, an endpoint key until the "
                "gateway has it); the first seals, every one opens, so a new key goes first and "
                "an old one leaves once nothing sealed with it remains. Required in production",
                shown="derived from `SECRET_KEY` in development"),
            Var("ALLOWED_HOSTS", "127.0.0.1,localhost",
                "comma-separated host names; required in production"),
            Var("CSRF_TRUSTED_ORIGINS", "",
                "origins allowed to POST behind a proxy, e.g. `https://portal.example.com`"),
            Var("TIME_ZONE", "UTC",
                "time zone for display and Celery's schedule"),
            Var("LOG_LEVEL", "INFO",
                "root log level"),
            Var("LOG_FORMAT", "",
                "`json`: one JSON object a line on stdout (time, level, logger, message, "
                "`request_id`, `user`, `tenant`); `text`: plain lines on stderr",
                shown="`json` in production, `text` in development"),
            Var("PROMETHEUS_MULTIPROC_DIR", "",
                "a writable, empty directory (e.g. `/tmp/metrics`, on the web pod's emptyDir) "
                "where each gunicorn worker writes its metrics, so that one scrape of `/metrics` "
                "sums them all; gunicorn's config (`portal/gunicorn_conf.py`) creates and empties "
                "it at start. Set it for the web process only; empty: each process counts alone"),
            Var("OTEL_EXPORTER_OTLP_ENDPOINT", "",
                "an OpenTelemetry collector's OTLP/HTTP base URL, e.g. "
                "`http://otel-collector:4318`: requests, SQL, Celery tasks and the calls out are "
                "traced and sent to `<endpoint>/v1/traces`; empty: no tracing"),
            Var("OTEL_SERVICE_NAME", "ai-factory-portal",
                "the `service.name` of the portal's spans"),
        ),
    ),
    Section(
        "Database",
        "",
        (
            Var("DATABASE_URL", "sqlite:///db.sqlite3",
                "the database: by default the SQLite file `db.sqlite3` in the checkout; PostgreSQL "
                "in production, `postgres://user:pass@host:5432/portal`"),
            Var("DATABASE_CONN_MAX_AGE", "",
                "seconds a worker keeps its database connection open between requests "
                "(health-checked before reuse); `0` opens one per request",
                shown="`60` in production, `0` in development"),
        ),
    ),
    Section(
        "Celery",
        "",
        (
            Var("CELERY_BROKER_URL", "",
                "Celery's broker: Redis in production, `redis://host:6379/0`; unset, tasks run "
                "in-process (the demo)",
                shown="`memory://`"),
            Var("CELERY_RESULT_BACKEND", "",
                "optional Celery result backend, e.g. `redis://host:6379/1`"),
            Var("CELERY_TASK_ALWAYS_EAGER", "",
                "run tasks in the calling process instead of a worker",
                shown="`true` without a broker"),
            Var("CELERY_TASK_DEFAULT_QUEUE", "celery",
                "the queue tasks are sent to (and workers started without `-Q` read)"),
            Var("CELERY_WORKER_CLUSTERS", "*",
                "the clusters whose own queues (`cluster.<slug>`) a worker serves besides its "
                "others, comma-separated; `*`: every cluster in service when it starts "
                "(docs/clusters.md)"),
            Var("CELERY_VISIBILITY_TIMEOUT", "100",
                "seconds before Redis hands out again a message no worker acknowledged (its worker "
                "was killed); must exceed `CELERY_TASK_TIME_LIMIT` + `CELERY_RETRY_BACKOFF_MAX`"),
            Var("CELERY_TASK_TIME_LIMIT", "60",
                "seconds a task may run (it is told to stop 5 s before)"),
            Var("CELERY_RETRY_BACKOFF_MAX", "30",
                "the longest wait between two tries of a failed task"),
            Var("BEAT_LOCK_TTL_SECONDS", "30",
                "Celery beat's lock in Redis (the broker) lasts this long unless renewed: a second "
                "beat waits, and takes over within this time once the first is gone"),
            Var("OUTBOX_SWEEP_SECONDS", "60",
                "how often mail that is still owed (broker or mail server down) is sent again"),
        ),
    ),
    Section(
        "Webhooks",
        "Tenants' and platform admins' webhooks ([Webhooks](webhooks.md)).",
        (
            Var("WEBHOOK_TIMEOUT_SECONDS", "10",
                "how long one try of a delivery may take in all: connecting (at most 5 s), "
                "sending and reading the answer; a slower answer is a failed try"),
            Var("WEBHOOK_MAX_ATTEMPTS", "10",
                "tries of one delivery before it is marked failed (it can be redelivered)"),
            Var("WEBHOOK_RETRY_MAX_SECONDS", "21600",
                "the longest wait between two tries of a delivery (the wait doubles from 30 s, "
                "spread by 25 %)"),
            Var("WEBHOOK_DISABLE_AFTER_FAILURES", "15",
                "failed tries in a row (of any of its deliveries) after which a hook is "
                "disabled and its owners are mailed, once they have lasted "
                "`WEBHOOK_DISABLE_AFTER_HOURS` too"),
            Var("WEBHOOK_DISABLE_AFTER_HOURS", "24",
                "how long a hook's failures in a row must have lasted (since the first of them) "
                "before it is disabled: a short outage during a burst of events does not"),
            Var("WEBHOOK_SWEEP_SECONDS", "30",
                "how often deliveries that are due (retries, or owed while the broker was down) "
                "are sent"),
            Var("WEBHOOK_ALLOW_INSECURE_LOCALHOST", "false",
                "`true` lets hooks reach 127.0.0.1/localhost, over plain HTTP too (tests, the "
                "demo); otherwise only HTTPS to public addresses. Never in production"),
        ),
    ),
    Section(
        "Cache",
        "",
        (
            Var("CACHE_URL", "",
                "the cache (API throttle counters, Keycloak discovery and keys); production: a "
                "shared one, e.g. `rediscache://redis:6379/2` (`?key_prefix=NAME` to share a "
                "Redis database with another portal)",
                shown="`locmemcache://`"),
        ),
    ),
    Section(
        "Fleet",
        "",
        (
            Var("FLEET_BACKEND", "simulated",
                "`kubernetes` drives a real cluster through the official client; `simulated` keeps "
                "the objects in the database (the demo)"),
            Var("KUBECONFIG", "",
                "the portal's own credentials (those of each cluster whose credentials are "
                "`environment`, such as the default cluster `main`; others are added with their "
                "own, docs/clusters.md): path to a kubeconfig; empty means in-cluster "
                "configuration (the pod's service account) inside a pod — where Kubernetes sets "
                "`KUBERNETES_SERVICE_HOST` — and `~/.kube/config` elsewhere"),
            Var("KUBE_CONTEXT", "",
                "kubeconfig context to use; empty means its current context"),
            Var("FLEET_REQUEST_TIMEOUT", "15",
                "seconds per Kubernetes API call"),
            Var("FLEET_FIELD_MANAGER", "ai-factory-portal",
                "field manager name for server-side apply"),
            Var("FLEET_LIST_PAGE_SIZE", "500",
                "objects per page of a Kubernetes list (`limit`/`continue`): every list the "
                "portal makes is read in pages of this size"),
            Var("FLEET_SERVICE_ACCOUNT", "portal",
                "the portal's own ServiceAccount, which each tenant's namespace binds to "
                "`FLEET_SECRETS_CLUSTER_ROLE` (see [RBAC](rbac.md))"),
            Var("FLEET_SERVICE_ACCOUNT_NAMESPACE", "",
                "that ServiceAccount's namespace",
                shown="the pod's own namespace (the service account's `namespace` file), "
                      "else `ai-factory-portal`"),
            Var("FLEET_SECRETS_CLUSTER_ROLE", "ai-factory-portal-tenant-secrets",
                "the ClusterRole, from `deploy/base/rbac`, through which the portal handles "
                "Secrets in tenants' namespaces only"),
            Var("FLEET_SIMULATED_READY_SECONDS", "20",
                "how long the simulated fleet takes to make an object ready"),
            Var("CLUSTER_PROBE_SECONDS", "30",
                "seconds between probes (`GET /version`) of every cluster in service, so an "
                "idle cluster's outage is noticed (see [when a cluster does not answer]"
                "(operations.md#when-a-cluster-does-not-answer))"),
            Var("CLUSTER_BACKOFF_SECONDS", "10",
                "a cluster that does not answer is tried again after this long, doubled after "
                "each failed try; until then calls to it fail at once"),
            Var("CLUSTER_BACKOFF_MAX_SECONDS", "300",
                "the longest wait between two tries of a cluster that does not answer"),
        ),
    ),
    Section(
        "Tenants on the cluster",
        "",
        (
            Var("TENANT_INGRESS_NAMESPACE", "ingress-gateway",
                "namespace of the ingress gateway that every tenant's NetworkPolicy lets in"),
            Var("TENANT_EDIT_CLUSTER_ROLE", "edit",
                "ClusterRole bound to the tenant's Keycloak group in its namespace"),
            Var("KUBERNETES_OIDC_GROUPS_PREFIX", "oidc:",
                "the API server's `--oidc-groups-prefix` (Keycloak group `x` is `oidc:x` in RBAC)"),
            Var("TENANT_RECONCILE_SWEEP_SECONDS", "300",
                "how often every tenant is re-applied (retries failures, repairs drift)"),
            Var("CREDENTIALS_RECONCILE_SWEEP_SECONDS", "300",
                "how often every tenant's model credentials are synced as Secrets again "
                "(retries failures, prunes deleted ones, repairs drift)"),
            Var("WORKLOAD_OBSERVE_SECONDS", "15",
                "how often every live workload's objects are read back (one list per kind) to "
                "follow its state"),
            Var("WORKLOAD_RECONCILE_SWEEP_SECONDS", "120",
                "how often workloads not applied yet, failing or still deleting are queued again"),
            Var("IDLE_GPU_SWEEP_SECONDS", "300",
                "how often every live workload's GPUs are read from DCGM (Prometheus) and the "
                "tenants' idle GPU policies applied (docs/idle-gpus.md)"),
            Var("IDLE_GPU_MODE", "off",
                "the fleet's default idle GPU policy for tenants that chose none: `off` (show "
                "idle GPUs only), `warn` (mail the owners) or `act` (warn, then give them back)"),
            Var("IDLE_GPU_THRESHOLD_PERCENT", "5",
                "the default threshold: a GPU is idle while its utilization stays below it"),
            Var("IDLE_GPU_WINDOW_MINUTES", "60",
                "the default window: idle when every sample of it is below the threshold"),
            Var("IDLE_GPU_GRACE_MINUTES", "60",
                "the default time between the warning and the action"),
            Var("NOTEBOOK_CULL_SWEEP_SECONDS", "900",
                "how often notebooks nobody used through the gateway (request counts in "
                "Prometheus) for their tenant's hours are stopped"),
            Var("KUBERNETES_CLUSTER_DOMAIN", "cluster.local",
                "the cluster's DNS domain, in the in-cluster addresses workload pages show"),
            Var("INFERENCE_GATEWAY", "ingress-gateway/fleet",
                "`<namespace>/<name>` of the fleet's Gateway API Gateway (Envoy Gateway) that "
                "serves inference endpoints over HTTPS with API keys (docs/deployment.md)"),
            Var("INFERENCE_GATEWAY_LISTENER", "https",
                "the name of that Gateway's HTTPS listener (the endpoints' routes attach to it)"),
            Var("INFERENCE_DOMAIN", "",
                "DNS suffix of the endpoints: each is `https://<name>-<tenant>.<domain>`, covered "
                "by the listener's wildcard certificate `*.<domain>`; empty: endpoints are not "
                "exposed outside the cluster",
                shown="`endpoints.demo.internal` with the simulated fleet, else empty"),
            Var("KUEUE_PRIORITY_SERVING", "1000",
                "value of the Kueue WorkloadPriorityClass `portal-serving` (inference endpoints): "
                "when a queue's quota is short, a higher value preempts a lower"),
            Var("KUEUE_PRIORITY_INTERACTIVE", "500",
                "value of `portal-interactive` (VMs and notebooks people work in)"),
            Var("KUEUE_PRIORITY_BATCH", "100",
                "value of `portal-batch` (Slurm clusters, training in a vCluster)"),
            Var("PORTAL_URL", "http://127.0.0.1:8000",
                "where people reach the portal; links in e-mails are absolute, e.g. "
                "`https://portal.example.com`"),
            Var("QUOTA_GRANT_REMINDER_DAYS", "7",
                "days before a temporary quota grant ends that its tenant is reminded"),
            Var("BILLING_CURRENCY", "EUR",
                "ISO 4217 code every amount of money is shown in (budgets, invoices)"),
            Var("BILLING_TAX_PERCENT", "",
                "tax charged on invoices, in percent of the discounted subtotal (e.g. `19`); empty:"
                " no tax"),
            Var("BILLING_PROVIDER_NAME", "AI Factory",
                "who bills: the provider, publisher and invoice issuer a FOCUS export names"),
            Var("BILLING_PAYMENT_TERMS_DAYS", "30",
                "days from an invoice's issue date to its due date"),
            Var("INVOICE_FILES_PRERENDER", "",
                "render an issued, paid or voided invoice's PDF, CSV and XLSX in a worker right "
                "after the decision (otherwise at their first download)",
                shown="`true` unless tasks run eagerly"),
            Var("INVOICE_EXPORT_INLINE_MAX_CSV", "20000",
                "an invoice list CSV of more invoices than this is written in the background "
                "(listed under \"Your exports\") rather than streamed while one waits"),
            Var("INVOICE_EXPORT_INLINE_MAX_XLSX", "2000",
                "the same for the list's XLSX (about 5 s of writing at 2,000 invoices on 2 cores)"),
            Var("INVOICE_EXPORT_KEEP_DAYS", "7",
                "days a background export is kept (the sweep, beat entry "
                "`billing-invoice-exports-sweep`, deletes older ones)"),
            Var("INVOICE_EXPORT_TIME_LIMIT", "1800",
                "seconds a worker may spend writing one export; past it, the export fails with the "
                "reason"),
        ),
    ),
    NOTEBOOKS,
    REMOTE_ACCESS,
    Section(
        "Metrics",
        "",
        (
            Var("PROMETHEUS_URL", "",
                "Prometheus with the DCGM exporter's series, e.g. `http://prometheus:9090` "
                "(measured GPU utilization)"),
            Var("PROMETHEUS_TIMEOUT", "5",
                "seconds before a Prometheus query gives up (the ingestion retries later)"),
        ),
    ),
    Section(
        "Fleet inventory and health",
        "",
        (
            Var("INVENTORY_SYNC_INTERVAL", "300",
                "seconds between reads of the cluster's Node objects into the inventory"),
            Var("HEALTH_INGEST_INTERVAL", "60",
                "seconds between DCGM health ingestions from Prometheus"),
            Var("HEALTH_LOOKBACK_MINUTES", "10",
                "how many minutes back a health finding counts"),
            Var("REMEDIATION_CORDON_AT", "warning",
                "cordon a node at this severity or worse (`info`, `warning`, `critical` or `off`)"),
            Var("REMEDIATION_DRAIN_AT", "critical",
                "drain a node to maintenance at this severity (evictions honour "
                "PodDisruptionBudgets)"),
            Var("REMEDIATION_CRITICAL_XIDS", "48,63,64,74,79,92,94,95,119,120",
                "GPU XID error codes that count as critical"),
        ),
    ),
    Section(
        "Sign-in",
        "",
        (
            Var("LOCAL_LOGIN_ENABLED", "true",
                "the username/password form, for bootstrap and the demo; turn it off in "
                "production"),
            Var("AXES_FAILURE_LIMIT", "5",
                "failed sign-ins before a username + address is locked out"),
            Var("AXES_COOLOFF_MINUTES", "15",
                "how long a lock-out lasts"),
            Var("SESSION_COOKIE_AGE", "28800",
                "session lifetime in seconds (8 hours)"),
        ),
    ),
    Section(
        "Sign-in with Keycloak",
        "(OpenID Connect; see [Identity](keycloak.md))",
        (
            Var("OIDC_ISSUER_URL", "",
                "the realm URL (the tokens' issuer), e.g. "
                "`https://sso.example.com/realms/ai-factory`; empty turns Keycloak sign-in off (the"
                " demo)"),
            Var("OIDC_RP_CLIENT_ID", "",
                "the portal's confidential client in that realm (required with `OIDC_ISSUER_URL`)"),
            Var("OIDC_RP_CLIENT_SECRET", "",
                "that client's secret (required with `OIDC_ISSUER_URL`)"),
            Var("OIDC_OP_AUTHORIZATION_ENDPOINT", "",
                "override the endpoint from `$OIDC_ISSUER_URL/.well-known/openid-configuration`",
                shown="discovered"),
            Var("OIDC_OP_TOKEN_ENDPOINT", "",
                "as above; with the authorization, token, userinfo and JWKS endpoints all set, no "
                "discovery request is made",
                shown="discovered"),
            Var("OIDC_OP_USER_ENDPOINT", "",
                "as above (userinfo)",
                shown="discovered"),
            Var("OIDC_OP_JWKS_ENDPOINT", "",
                "as above (signing keys)",
                shown="discovered"),
            Var("OIDC_OP_LOGOUT_ENDPOINT", "",
                "as above (RP-initiated logout: signing out of the portal signs out of Keycloak)",
                shown="discovered"),
            Var("OIDC_RP_SCOPES", "openid email profile",
                "scopes the portal asks for"),
            Var("OIDC_TIMEOUT", "10",
                "seconds: HTTP timeout towards Keycloak"),
            Var("OIDC_CLOCK_LEEWAY", "30",
                "seconds of clock difference tolerated between the portal and Keycloak"),
            Var("OIDC_DISCOVERY_CACHE_SECONDS", "3600",
                "how long the discovery document is cached"),
            Var("OIDC_JWKS_CACHE_SECONDS", "3600",
                "how long the realm's signing keys are cached"),
            Var("OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS", "300",
                "how often a signed-in user's Keycloak session is re-checked (a user disabled in "
                "Keycloak loses the portal within this time)"),
            Var("OIDC_ROLE_PLATFORM_ADMIN", "platform-admin",
                "Keycloak realm or client roles (comma-separated) that make a user a platform "
                "admin"),
            Var("OIDC_ROLE_FINANCE", "finance",
                "Keycloak realm or client roles (comma-separated) that make a user finance staff"),
            Var("OIDC_GROUP_PREFIX", "/tenants/",
                "groups `<prefix><tenant slug>/<role>` (role: `owner`, `member` or `viewer`) "
                "become tenant memberships"),
            Var("OIDC_API_AUDIENCE", "",
                "audience a Keycloak access token must carry to be accepted as an API bearer token",
                shown="`OIDC_RP_CLIENT_ID`"),
            Var("OIDC_CLI_CLIENT_ID", "portal-cli",
                "the realm's public client that portalctl signs in with (device authorization "
                "grant); published with the issuer at `/.well-known/portalctl.json`"),
            Var("KEYCLOAK_DIRECTORY_CLIENT_ID", "",
                "the realm's service-account client for the directory sync (`realm-management` "
                "roles `view-users`, `query-groups`; see [Identity](keycloak.md)); empty turns the "
                "sync off"),
            Var("KEYCLOAK_DIRECTORY_CLIENT_SECRET", "",
                "that client's secret"),
            Var("KEYCLOAK_DIRECTORY_SYNC_SECONDS", "300",
                "how often Keycloak's directory is pulled: users disabled or deleted there are "
                "deactivated and their API tokens revoked; memberships and roles follow groups and "
                "roles"),
            Var("KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT", "240",
                "the longest one sync runs, in seconds (under the interval; its reads stop a minute"
                " before)"),
            Var("KEYCLOAK_DIRECTORY_CONCURRENCY", "8",
                "how many Admin REST calls one sync makes at a time"),
            Var("KEYCLOAK_DIRECTORY_READ_MAX_AGE", "3600",
                "seconds: a directory read that ran out of time is resumed by the next syncs; one "
                "begun longer ago than this starts over (at least twice the interval; see "
                "[Identity](keycloak.md))"),
            Var("API_TOKEN_MAX_LIFETIME_DAYS", "90",
                "the longest a personal API token lives; longer is refused, older tokens stop "
                "working"),
            Var("OIDC_INTROSPECT_ACCESS_TOKENS", "false",
                "a JWT bearer access token is checked locally (signature, issuer, audience, "
                "expiry) and trusted until it expires; `true` also asks Keycloak (token "
                "introspection, cached) whether it is still active, so one revoked in Keycloak is "
                "refused within OIDC_INTROSPECTION_CACHE_SECONDS"),
            Var("OIDC_INTROSPECTION_CACHE_SECONDS", "60",
                "how long Keycloak's introspection answer for a bearer token (opaque tokens, and "
                "JWTs with OIDC_INTROSPECT_ACCESS_TOKENS) is cached; never past the token's "
                "expiry; 0 asks on every request"),
        ),
    ),
    Section(
        "API throttles and operations",
        "",
        (
            Var("API_THROTTLE_USER_RATE", "6000/hour",
                "API requests per signed-in user; beyond, a JSON 429 with `Retry-After`"),
            Var("API_THROTTLE_ANON_RATE", "600/hour",
                "API requests per anonymous client address"),
            Var("TRUSTED_PROXY_COUNT", "0",
                "proxies in front of the portal that append to `X-Forwarded-For`; 0 counts the "
                "peer's own address (a forged header changes nothing)"),
            Var("METRICS_BEARER_TOKEN", "",
                "the scraper's bearer token for `/metrics` (and `/readyz` details); taken over "
                "HTTPS only in production"),
            Var("METRICS_ALLOWED_NETWORKS", "",
                "CIDRs whose direct peers (never a forwarded address) read `/metrics` and `/readyz`"
                " details without a token, e.g. the cluster's pod network",
                shown="`127.0.0.1/32,::1/128` (development), empty (production)"),
        ),
    ),
    Section(
        "Production security",
        "(read only when `PORTAL_ENV=production`)",
        (
            Var("SESSION_COOKIE_SECURE", "true",
                "session cookie only over HTTPS"),
            Var("CSRF_COOKIE_SECURE", "true",
                "CSRF cookie only over HTTPS"),
            Var("SECURE_SSL_REDIRECT", "true",
                "redirect HTTP to HTTPS (not `/healthz`, `/readyz`, `/metrics`)"),
            Var("SECURE_HSTS_SECONDS", "31536000",
                "HSTS max-age"),
            Var("SECURE_HSTS_PRELOAD", "true",
                "add `preload` to the HSTS header"),
        ),
    ),
    Section(
        "Email",
        "",
        (
            Var("EMAIL_URL", "consolemail://",
                "where mail goes, e.g. `smtp://user:pass@host:587/?tls=True`"),
            Var("DEFAULT_FROM_EMAIL", "portal@localhost",
                "sender address"),
        ),
    ),
    Section(
        "Metering",
        "(usage records every hour, from workloads and, with `PROMETHEUS_URL`, from DCGM in "
        "Prometheus; without it measured metering is off and makes no windows)",
        (
            Var("METERING_MINUTE", "5",
                "minute past each hour at which the last closed hour is metered (beat entry "
                "`billing-meter-hourly`)"),
            Var("METERING_LOOKBACK_HOURS", "48",
                "how far back each run looks for hours not metered yet or metered as gaps "
                "(Prometheus was down): they are metered again"),
            Var("METERING_MAX_WINDOWS_PER_RUN", "24",
                "the most windows (one source's hour) one run meters, the oldest first"),
            Var("METERING_START", "",
                "nothing before this instant is metered (ISO 8601 with its zone, e.g. "
                "`2026-01-01T00:00:00Z`); empty: only the look-back limits"),
            Var("METERING_STEP_SECONDS", "30",
                "the PromQL subquery step of measured metering; at least the scrape interval of the"
                " DCGM exporter (and OpenCost), and dividing an hour"),
            Var("METERING_OPENCOST_THRESHOLD_PERCENT", "10",
                "a tenant-hour whose GPU-seconds in OpenCost's `container_gpu_allocation` differ "
                "more than this from the allocated ones is flagged to admins"),
        ),
    ),
)


def declared() -> dict[str, Var]:
    return {var.name: var for section in SECTIONS for var in section.variables}
