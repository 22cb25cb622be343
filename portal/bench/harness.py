"""`make bench`: the fleet-scale data set served by gunicorn in the production posture, every
page measured against a floor page of the same server in the same run (issue 13).

Steps: build the data set in the bench database, or clone it from the cached template database
of the same scale, seed, month, generator and migrations; migrate; collect static files; count
each page's SQL queries in-process (Django's test client); start gunicorn on 127.0.0.1 with
PORTAL_ENV=production; sign the bench accounts in through the session engine; time each page
sequentially and from concurrent clients; read the workers' peak RSS; write results.json and
results.md. Request counts and time are bounded; nothing leaves the machine.

Run after `django.setup()` with DATABASE_URL set to the bench database (`portal.bench.__main__`
does both).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import environ
import psycopg
from django.conf import settings
from django.core.management import call_command
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import Resolver404, resolve

from billing.models import Invoice
from inventory.models import Node
from tenants.models import Workload

from . import dataset
from .pages import FLOOR, PAGES, TARGET_RATIO, Page

BASE_DIR = Path(settings.BASE_DIR)
USERS = {"owner": dataset.BENCH_OWNER, "admin": dataset.BENCH_ADMIN,
         "finance": dataset.BENCH_FINANCE}
SERVER_START_TIMEOUT = 60
REQUEST_TIMEOUT = 120


@dataclasses.dataclass(frozen=True)
class Options:
    database_url: str
    scale: float
    seed: int
    requests: int  # per page, sequentially; as many again from the concurrent clients
    concurrency: int
    workers: int
    out: Path
    secret_key: str
    seconds_per_mode: float  # each page's sequential and concurrent runs stop after this long

    @property
    def database_name(self) -> str:
        return environ.Env.db_url_config(self.database_url)["NAME"]


def options_from_environment() -> Options:
    scale = float(os.environ.get("BENCH_SCALE") or 1)
    default_requests = 200 if scale >= 0.5 else 40
    return Options(
        database_url=os.environ["DATABASE_URL"],
        scale=scale,
        seed=int(os.environ.get("BENCH_SEED") or 42),
        requests=int(os.environ.get("BENCH_REQUESTS") or default_requests),
        concurrency=int(os.environ.get("BENCH_CONCURRENCY") or 4),
        workers=int(os.environ.get("BENCH_WORKERS") or 4),
        out=Path(os.environ.get("BENCH_OUT") or BASE_DIR / "artifacts" / "bench"),
        secret_key=os.environ["SECRET_KEY"],
        seconds_per_mode=float(os.environ.get("BENCH_SECONDS_PER_MODE") or 120),
    )


# --- the data set, built once per scale and cached as a template database -----------------------


def _maintenance(database_url: str) -> psycopg.Connection:
    config = environ.Env.db_url_config(database_url)
    return psycopg.connect(
        host=config["HOST"] or None, port=config["PORT"] or None, user=config["USER"] or None,
        password=config["PASSWORD"] or None, dbname="postgres", autocommit=True,
    )


def _fingerprint(options: Options, anchor: datetime.datetime) -> str:
    """What the cached data set depends on: the seed, the month, the generator's code and
    every migration (names and contents)."""
    digest = hashlib.sha256(json.dumps([options.seed, anchor.isoformat()]).encode())
    sources = [Path(dataset.__file__), *sorted(BASE_DIR.glob("*/migrations/0*.py"))]
    for path in sources:
        digest.update(str(path.relative_to(BASE_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:8]


def template_name(options: Options, anchor: datetime.datetime) -> str:
    scale = f"{options.scale:g}".replace(".", "_")
    return f"{options.database_name}_s{scale}_{_fingerprint(options, anchor)}"[:63]


def _recreate(admin: psycopg.Connection, name: str, template: str | None = None) -> None:
    admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = %s AND pid <> pg_backend_pid()", [name])
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))


def prepare_data_set(options: Options, log) -> dict[str, Any]:
    """The bench database holding the data set: cloned from the cache, or built and cached."""
    name = options.database_name
    if "bench" not in name:
        raise SystemExit(f"Refusing to replace database {name!r}: its name must say 'bench'.")
    anchor = dataset.default_anchor()
    template = template_name(options, anchor)
    connections.close_all()
    started = time.perf_counter()
    with _maintenance(options.database_url) as admin:
        cached = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                               [template]).fetchone()
        if cached:
            log(f"Data set: reusing {template}.")
            _recreate(admin, name, template)
            return {"cached": True, "template": template,
                    "clone_seconds": round(time.perf_counter() - started, 2)}
        log(f"Data set: building scale {options.scale:g} (cached as {template}).")
        _recreate(admin, name)
        call_command("migrate", verbosity=0)
        migrated = time.perf_counter()
        summary = dataset.generate(scale=options.scale, seed=options.seed, anchor=anchor, log=log)
        connections.close_all()
        # Older caches of this scale (another month, generator or migration) are dropped.
        prefix = template.rsplit("_", 1)[0] + "_"
        for (stale,) in admin.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s",
                [prefix.replace("_", r"\_") + "%", template]).fetchall():
            admin.execute(f'DROP DATABASE IF EXISTS "{stale}"')
        admin.execute(f'CREATE DATABASE "{template}" TEMPLATE "{name}"')
        return {"cached": False, "template": template,
                "migrate_seconds": round(migrated - started, 2),
                "generate_seconds": summary["total_seconds"],
                "cache_seconds": round(time.perf_counter() - migrated - summary["total_seconds"],
                                       2),
                "rows": summary["rows"], "step_seconds": summary["seconds"]}


# --- the pages, their objects and the signed-in accounts ---------------------------------------


def objects_for_paths() -> dict[str, Any]:
    tenant = dataset.BENCH_TENANT
    workload = (Workload.objects.filter(tenant__slug=tenant, status="ready")
                .order_by("id").values_list("id", flat=True).first())
    invoice = (Invoice.objects.exclude(status="draft").order_by("-period_start", "id")
               .values_list("id", flat=True).first())
    return {"tenant": tenant, "workload": workload,
            "node": Node.objects.order_by("id").values_list("id", flat=True).first(),
            "invoice": invoice}


def resolves(path: str) -> bool:
    try:
        resolve(path.split("?", 1)[0])
    except Resolver404:
        return False
    return True


def session_cookies() -> dict[str, str]:
    """A session per bench account, made by Django's session engine (as a sign-in makes it)."""
    from django.contrib.auth import get_user_model

    cookies = {}
    for role, username in USERS.items():
        client = Client()
        client.force_login(get_user_model().objects.get(username=username),
                           backend="django.contrib.auth.backends.ModelBackend")
        cookies[role] = client.cookies[settings.SESSION_COOKIE_NAME].value
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


# --- gunicorn in the production posture --------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_environment(options: Options) -> dict[str, str]:
    """The production posture: DEBUG off, SECRET_KEY and ALLOWED_HOSTS from the environment,
    WhiteNoise serving the manifest of collected static files, HTTPS at the proxy."""
    return {
        key: value for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "BENCH_", "PYTEST"))
    } | {
        "PORTAL_ENV": "production",
        "SECRET_KEY": options.secret_key,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": options.database_url,
        "BENCH_FLOOR_ENABLED": "true",
        # The bench signs a few accounts in for thousands of API requests: no 429s.
        "API_THROTTLE_USER_RATE": "1000000/hour",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
    }


def _static_fingerprint() -> str:
    """Every static file the finders see, by name, size and modification time."""
    from django.contrib.staticfiles import finders

    digest = hashlib.sha256()
    for finder in finders.get_finders():
        for path, storage in finder.list(["CVS", ".*", "*~"]):
            stat = os.stat(storage.path(path))
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def collect_static(options: Options) -> bool:
    """`collectstatic` as production runs it (hashed names, a manifest, compressed copies),
    unless the files collected last time are still those the finders see. True if it ran."""
    root = Path(settings.STATIC_ROOT)
    marker = root / ".bench-collected"
    fingerprint = _static_fingerprint()
    if (root / "staticfiles.json").exists() and marker.exists() \
            and marker.read_text() == fingerprint:
        return False
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--no-input", "-v", "0"],
        cwd=BASE_DIR, env=server_environment(options), check=True, timeout=600,
    )
    marker.write_text(fingerprint)
    return True


def start_server(options: Options, port: int, log_path: Path) -> subprocess.Popen:
    env = server_environment(options)
    command = [
        sys.executable, "-m", "gunicorn", "portal.wsgi:application",
        "--bind", f"127.0.0.1:{port}", "--workers", str(options.workers),
        "--timeout", str(REQUEST_TIMEOUT), "--log-level", "warning",
    ]
    log = log_path.open("wb")
    server = subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=log,  # noqa: S603
                              stderr=subprocess.STDOUT)
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"gunicorn exited with {server.returncode}: see {log_path}")
        try:
            status, _ = fetch(port, "/healthz", None)
            if status == 200 and len(worker_pids(server.pid)) >= options.workers:
                return server
        except OSError:
            pass
        time.sleep(0.2)
    stop_server(server)
    raise SystemExit(f"gunicorn did not answer within {SERVER_START_TIMEOUT} s: see {log_path}")


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def worker_pids(master: int) -> list[int]:
    try:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    except OSError:
        return []
    return [int(pid) for pid in children]


def peak_rss_mib(pid: int) -> float | None:
    """The process's peak resident set (VmHWM) so far, in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def fetch(port: int, path: str, cookie: str | None) -> tuple[int, int]:
    """GET `path` as a browser behind the TLS proxy would; (status, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        headers = {"X-Forwarded-Proto": "https", "Accept": "text/html,application/json"}
        if cookie:
            headers["Cookie"] = f"{settings.SESSION_COOKIE_NAME}={cookie}"
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, len(response.read())
    finally:
        conn.close()


# --- timing ----------------------------------------------------------------------------------


def _summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(p95 * 1000, 1), "count": len(ordered)}


def warm_up(port: int, rows: list[dict[str, Any]], cookies: dict[str, str],
            options: Options) -> None:
    """Every page twice per worker, from as many clients as workers, before any timing: each
    worker has loaded its URLconf and compiled every template once (the first request a worker
    serves of a page costs several times a warm one)."""

    def client(row: dict[str, Any]) -> None:
        for _ in range(2):
            fetch(port, row["path"], cookies[row["user"]])

    for row in rows:
        threads = [threading.Thread(target=client, args=(row,)) for _ in range(options.workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def time_page(port: int, path: str, cookie: str, options: Options) -> dict[str, Any]:
    errors: list[int] = []

    def one(latencies: list[float]) -> None:
        started = time.perf_counter()
        status, _ = fetch(port, path, cookie)
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
    elapsed = time.perf_counter() - started
    return {
        "sequential": _summary(sequential),
        "concurrent": _summary(concurrent) | {
            "clients": options.concurrency,
            "requests_per_second": round(len(concurrent) / elapsed, 1),
        },
        "errors": len(errors),
        "error_statuses": sorted(set(errors)),
    }


# --- the run ---------------------------------------------------------------------------------


def run(options: Options, log=print) -> dict[str, Any]:
    options.out.mkdir(parents=True, exist_ok=True)
    data_set = prepare_data_set(options, log)
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    if collect_static(options):
        log(f"Static files collected in {time.perf_counter() - started:.1f} s.")
    else:
        log("Static files: collected already, unchanged.")
    objects = objects_for_paths()
    cookies = session_cookies()

    rows: list[dict[str, Any]] = []
    for page in PAGES:
        path = page.path.format(**objects)
        row: dict[str, Any] = {"name": page.name, "path": path, "user": page.user,
                               "api": page.api, "note": page.note}
        missing = [key for key in _placeholders(page.path) if objects.get(key) is None]
        if not resolves(path):
            if not page.planned:
                raise SystemExit(f"{page.name}: {path} does not resolve (portal/bench/pages.py)")
            row["skipped"] = "not built yet"
        elif missing:
            row["skipped"] = f"no {', '.join(missing)} in the data set"
        else:
            row |= count_queries(page, path, cookies[page.user])
        rows.append(row)
    connections.close_all()

    port = free_port()
    server = start_server(options, port, options.out / "gunicorn.log")
    try:
        for row in rows:
            if "skipped" not in row and row["status"] != 200:
                row["skipped"] = f"answered {row['status']} in-process"
        measured = [row for row in rows if "skipped" not in row]
        warm_up(port, measured, cookies, options)
        for row in measured:
            log(f"  timing {row['name']} …")
            row |= time_page(port, row["path"], cookies[row["user"]], options)
        workers = {pid: peak_rss_mib(pid) for pid in worker_pids(server.pid)}
        master_rss = peak_rss_mib(server.pid)
    finally:
        stop_server(server)

    floor = next(row for row in rows if row["name"] == FLOOR)
    for row in rows:
        if "sequential" in row and "sequential" in floor:
            for mode in ("sequential", "concurrent"):
                row[mode]["p95_ratio"] = round(row[mode]["p95_ms"] / floor[mode]["p95_ms"], 2)
                row[mode]["median_ratio"] = round(
                    row[mode]["median_ms"] / floor[mode]["median_ms"], 2)
            row["meets_target"] = row["concurrent"]["p95_ratio"] <= TARGET_RATIO
    known = [rss for rss in workers.values() if rss is not None]
    results = {
        "meta": {
            "when": datetime.datetime.now(tz=datetime.UTC).isoformat(timespec="seconds"),
            "commit": _commit(),
            "scale": options.scale, "seed": options.seed,
            "requests_per_page": options.requests, "concurrency": options.concurrency,
            "gunicorn_workers": options.workers, "cpus": os.cpu_count(),
            "floor": FLOOR,
            "target_p95_ratio": TARGET_RATIO,
        },
        "data_set": data_set,
        "pages": rows,
        "memory": {"web_worker_peak_rss_mib": max(known) if known else None,
                   "web_workers_mib": {str(pid): rss for pid, rss in workers.items()},
                   "gunicorn_master_peak_rss_mib": master_rss},
        "not_measured_yet": [
            "usage ingestion rows/s against COPY", "month-end invoicing against SQL",
            "provisioning throughput through Celery and the Kubernetes emulator",
            "peak RSS of a Celery worker",
        ],
    }
    results["query_counts_by_scale"] = query_counts_by_scale(options, rows)
    (options.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    markdown = render_markdown(results)
    (options.out / "results.md").write_text(markdown)
    log(markdown)
    return results


def query_counts_by_scale(options: Options, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """This run's SQL query count per page, kept per scale next to the results, and set beside
    the counts of every other scale run here: a page whose count grows with the data shows."""
    counts = {row["name"]: row["queries"] for row in rows if "queries" in row}
    (options.out / f"queries-s{options.scale:g}.json").write_text(
        json.dumps(counts, indent=2) + "\n")
    by_scale = {f"{options.scale:g}": counts}
    for path in sorted(options.out.glob("queries-s*.json")):
        scale = path.stem.removeprefix("queries-s")
        if scale not in by_scale:
            by_scale[scale] = json.loads(path.read_text())
    differ = sorted(
        name for name in counts
        if len({scale_counts.get(name, counts[name]) for scale_counts in by_scale.values()}) > 1
    )
    return {"scales": by_scale, "differ": differ}


def _placeholders(path: str) -> list[str]:
    return [part.split("}", 1)[0] for part in path.split("{")[1:]]


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BASE_DIR,  # noqa: S607
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return ""


def _verdict(row: dict[str, Any]) -> str:
    if row["name"] == FLOOR or "meets_target" not in row:
        return ""
    return "met" if row["meets_target"] else "missed"


def render_markdown(results: dict[str, Any]) -> str:
    meta, memory = results["meta"], results["memory"]
    lines = [
        f"# Fleet-scale benchmark: scale {meta['scale']:g}",
        "",
        f"{meta['when']}, commit {meta['commit'] or '?'}; gunicorn with "
        f"{meta['gunicorn_workers']} sync workers (PORTAL_ENV=production) on {meta['cpus']} "
        f"CPUs; {meta['requests_per_page']} sequential requests per page, then as many from "
        f"{meta['concurrency']} concurrent clients. Ratios are p95 ÷ the floor's p95 "
        "(`/bench/floor/`: session, user and one query) in the same mode; the target is "
        f"{meta['target_p95_ratio']:g} times with {meta['concurrency']} clients.",
        "",
        "| page | status | queries | KiB | rows | median ms | p95 ms | p95 ÷ floor | "
        f"median ms ({meta['concurrency']}) | p95 ms ({meta['concurrency']}) | "
        f"p95 ÷ floor ({meta['concurrency']}) | target |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in results["pages"]:
        if "sequential" not in row:
            lines.append(f"| {row['name']} | {row.get('skipped', '')} | "
                         f"{row.get('queries', '')} | | | | | | | | | |")
            continue
        seq, conc = row["sequential"], row["concurrent"]
        lines.append(
            f"| {row['name']} | {row['status']}{' ⚠' + str(row['errors']) if row['errors'] else ''}"
            f" | {row['queries']} | {row['bytes'] / 1024:.1f} | {row['rows'] or ''} | "
            f"{seq['median_ms']} | {seq['p95_ms']} | {seq.get('p95_ratio', '')} | "
            f"{conc['median_ms']} | {conc['p95_ms']} | {conc.get('p95_ratio', '')} | "
            f"{_verdict(row)} |"
        )
    by_scale = results["query_counts_by_scale"]
    if len(by_scale["scales"]) > 1:
        lines += ["", "SQL queries per page at the scales run here ("
                  + ", ".join(sorted(by_scale["scales"])) + "): "
                  + ("the same on every page." if not by_scale["differ"] else
                     "they differ on " + ", ".join(by_scale["differ"]) + ".")]
    lines += [
        "",
        f"Peak RSS of a web worker: {memory['web_worker_peak_rss_mib']} MiB "
        f"(master {memory['gunicorn_master_peak_rss_mib']} MiB).",
        "",
        "Not measured yet: " + "; ".join(results["not_measured_yet"]) + ".",
        "",
    ]
    return "\n".join(lines)
