"""Operations endpoints: liveness, readiness (database, broker, cache), Prometheus metrics.

/readyz is 503 only when the database cannot be reached: nothing works without it. A broker or
cache that is down leaves it 200 with the status "degraded" (pages and the API go on: writes
queue their follow-up later, the cache fails open), so that a Redis outage does not take every
web pod out of its Service at once.

/healthz answers everyone (liveness probes). /readyz answers everyone with its status (readiness
probes need only that) and shows what each check found only to operators: a scraper with the
metrics bearer token, a direct peer in METRICS_ALLOWED_NETWORKS, or a signed-in platform admin.
/metrics answers operators only. Both skip the HTTPS redirect (probes and in-cluster scrapers
speak plain HTTP to the pod), so the bearer token counts only over HTTPS in production.
"""

import hmac
import ipaddress
import time
from functools import cache

from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from kombu import Connection
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .metrics import scrape_registry
from .redis_cache import cache_ping


@cache
def _allowed_networks(
    networks: tuple[str, ...],
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(n.strip(), strict=False) for n in networks if n.strip())


def peer_in_allowed_networks(request: HttpRequest) -> bool:
    """The direct peer (REMOTE_ADDR, never a forwarded address) is in METRICS_ALLOWED_NETWORKS."""
    try:
        peer = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    networks = _allowed_networks(tuple(settings.METRICS_ALLOWED_NETWORKS))
    return any(peer in network for network in networks)


def _bearer_token_matches(request: HttpRequest) -> bool:
    """The metrics token, presented over HTTPS (over plain HTTP only where the portal does not
    insist on HTTPS: a development checkout)."""
    expected = settings.METRICS_BEARER_TOKEN
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if not expected or scheme.lower() != "bearer" or not presented:
        return False
    if settings.SECURE_SSL_REDIRECT and not request.is_secure():
        return False
    return hmac.compare_digest(presented.strip().encode(), expected.encode())


def is_operator(request: HttpRequest) -> bool:
    """A scraper or operator: the metrics bearer token, or a peer in the allowed networks."""
    return _bearer_token_matches(request) or peer_in_allowed_networks(request)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _check_database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"status": "ok", "vendor": connection.vendor}


def _check_broker() -> dict:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"status": "ok", "detail": "eager mode: tasks run in-process, no broker"}
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=2) as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
    return {"status": "ok"}


def _check_cache() -> dict:
    cache_ping(caches["default"])
    return {"status": "ok", "backend": type(caches["default"]).__name__}


CHECKS = {"database": _check_database, "broker": _check_broker, "cache": _check_cache}
# Without these the pod serves nothing; without the others it serves, degraded.
ESSENTIAL = ("database",)


def _sees_readiness_details(request: HttpRequest) -> bool:
    if is_operator(request):
        return True
    # Platform admins: portal's infrastructure knows no app, but the access rules answer
    # through the authentication backends, which give platform admins every permission.
    user = getattr(request, "user", None)
    return bool(user and user.is_active and user.has_perm("portal.view_auditevent"))


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    results = {}
    for name, check in CHECKS.items():
        started = time.monotonic()
        try:
            result = check()
        except Exception as exc:  # readiness reports every failure, whatever its kind
            result = {"status": "fail", "detail": f"{type(exc).__name__}: {exc}"[:300]}
        result["ms"] = round(1000 * (time.monotonic() - started), 1)
        results[name] = result
    ready = all(results[name]["status"] == "ok" for name in ESSENTIAL)
    healthy = all(r["status"] == "ok" for r in results.values())
    body: dict = {"status": "ok" if healthy else "degraded" if ready else "fail"}
    if _sees_readiness_details(request):
        body["checks"] = results  # addresses, versions and error texts: operators only
    return JsonResponse(body, status=200 if ready else 503)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not is_operator(request):
        response = HttpResponse(
            "Metrics are for the scraper: send METRICS_BEARER_TOKEN as a bearer token over HTTPS, "
            "or scrape from an address in METRICS_ALLOWED_NETWORKS.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(scrape_registry()), content_type=CONTENT_TYPE_LATEST)
