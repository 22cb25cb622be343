"""Operations endpoints: liveness, readiness (database and broker), Prometheus metrics."""

import time

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from kombu import Connection


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


CHECKS = {"database": _check_database, "broker": _check_broker}


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
    ready = all(r["status"] == "ok" for r in results.values())
    return JsonResponse(
        {"status": "ok" if ready else "fail", "checks": results}, status=200 if ready else 503
    )
