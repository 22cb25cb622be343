"""Each page measured: its SQL queries in-process, then its latencies against the server."""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from typing import Any

from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from .options import USERS, Options
from .pages import Page
from .server import fetch


def session_cookies() -> dict[str, str]:
    """A session per bench account, made by Django's session engine (as a sign-in makes it)."""
    return {role: login_cookies([username])[username] for role, username in USERS.items()}


def login_cookies(usernames: list[str], prefix: str = "") -> dict[str, str]:
    """A session per user named, keyed `prefix + username`."""
    from django.contrib.auth import get_user_model

    cookies = {}
    for user in get_user_model().objects.filter(username__in=usernames):
        client = Client()
        client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
        cookies[prefix + user.username] = client.cookies[settings.SESSION_COOKIE_NAME].value
    return cookies


def count_queries(page: Page, path: str, cookie: str) -> dict[str, Any]:
    """Status, SQL queries and size of one request in-process (after one to warm up)."""
    client = Client(HTTP_HOST="127.0.0.1")
    client.cookies[settings.SESSION_COOKIE_NAME] = cookie
    client.get(path)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    body = b"".join(response) if response.streaming else response.content
    return {"status": response.status_code, "queries": len(queries), "bytes": len(body),
            "rows": _rows(page, body)}


def _rows(page: Page, body: bytes) -> int | None:
    if page.api:
        try:
            data = json.loads(body)
        except ValueError:
            return None
        return len(data["results"]) if isinstance(data, dict) and "results" in data else None
    if page.path.startswith("/admin/"):
        return body.count(b'name="_selected_action"')
    return None


def latency_summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(p95 * 1000, 1), "count": len(ordered)}


# Warm-up per page: every client sends it at least WARM_UP_MIN times and up to WARM_UP_MAX
# times while WARM_UP_SECONDS last (a page of several seconds, a long export, stops
# at the minimum).
WARM_UP_MIN = 2
WARM_UP_MAX = 8
WARM_UP_SECONDS = 2.0


def warm_up(port: int, rows: list[dict[str, Any]], cookies: dict[str, str],
            options: Options) -> None:
    """Every page from as many clients as workers, several times each, before any timing: a
    worker's first request of a page loads its URLconf, compiles its templates and fills the
    caches kept per process. Workers take requests as they come, so each page is sent up to
    WARM_UP_MAX times per client for every worker to have served it: the timings are of a
    server that has been serving, as a production worker has."""

    def client(row: dict[str, Any]) -> None:
        deadline = time.monotonic() + WARM_UP_SECONDS
        for sent in range(1, WARM_UP_MAX + 1):
            started = time.monotonic()
            attempt(port, row["path"], cookies[row["user"]])
            # A page that outlasts the whole warm-up (a long export) has been
            # served by every worker after one round: its concurrent requests each held one.
            if sent == 1 and time.monotonic() - started > WARM_UP_SECONDS:
                break
            if sent >= WARM_UP_MIN and time.monotonic() > deadline:
                break

    for row in rows:
        threads = [threading.Thread(target=client, args=(row,)) for _ in range(options.workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def attempt(port: int, path: str, cookie: str) -> int | str:
    """The status of one GET of `path`, or why there was none: a page that outlasts the
    server's or the client's timeout is reported as an error of its row, not the end of the
    run."""
    try:
        status, _ = fetch(port, path, cookie)
    except TimeoutError:
        return "timed out"
    except (OSError, http.client.HTTPException) as exc:
        return f"no answer ({type(exc).__name__})"
    return status


def time_page(port: int, path: str, cookie: str, options: Options) -> dict[str, Any]:
    """`path` timed: `options.requests` requests one after another, then as many from
    `options.concurrency` clients; each mode's median and p95."""
    return summarise(time_latencies(port, path, cookie, options))


def time_latencies(port: int, path: str, cookie: str, options: Options) -> dict[str, Any]:
    """The latencies (seconds) of `time_page`'s requests, per mode."""
    errors: list[int | str] = []

    def one(latencies: list[float]) -> None:
        started = time.perf_counter()
        status = attempt(port, path, cookie)
        # A request with no answer counts as an error, and its time (up to the timeout) as
        # its latency: the page took at least that long.
        latencies.append(time.perf_counter() - started)
        if status != 200:
            errors.append(status)

    sequential: list[float] = []
    deadline = time.monotonic() + options.seconds_per_mode
    for _ in range(options.requests):
        one(sequential)
        if time.monotonic() > deadline:
            break
    concurrent: list[float] = []
    per_client = max(1, options.requests // options.concurrency)
    deadline = time.monotonic() + options.seconds_per_mode

    def client() -> None:
        for _ in range(per_client):
            one(concurrent)
            if time.monotonic() > deadline:
                break

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(options.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"sequential": sequential, "concurrent": concurrent, "clients": options.concurrency,
            "elapsed": time.perf_counter() - started, "errors": errors}


def summarise(timed: dict[str, Any]) -> dict[str, Any]:
    """Medians and p95s of `time_latencies`' answer (or of several pooled by `pool`)."""
    return {
        "sequential": latency_summary(timed["sequential"]),
        "concurrent": latency_summary(timed["concurrent"]) | {
            "clients": timed["clients"],
            "requests_per_second": round(len(timed["concurrent"]) / timed["elapsed"], 1),
        },
        "errors": len(timed["errors"]),
        "error_statuses": sorted(set(timed["errors"]), key=str),
    }


def pool(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """Several `time_latencies` answers of one page as one: every request of every window."""
    return {
        "sequential": [t for w in windows for t in w["sequential"]],
        "concurrent": [t for w in windows for t in w["concurrent"]],
        "clients": windows[0]["clients"],
        "elapsed": sum(w["elapsed"] for w in windows),
        "errors": [e for w in windows for e in w["errors"]],
    }


def window_spread(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """How far the windows pooled by `pool` were from each other: each mode's lowest and
    highest p95 (ms), and the first window's (the floor as one window measures it)."""
    spread: dict[str, Any] = {"windows": len(windows)}
    for mode in ("sequential", "concurrent"):
        p95s = [latency_summary(w[mode])["p95_ms"] for w in windows]
        spread[mode] = {"first_p95_ms": p95s[0], "lowest_p95_ms": min(p95s),
                        "highest_p95_ms": max(p95s)}
    return spread
