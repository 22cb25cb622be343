"""`make bench`: the fleet-scale data set served by gunicorn in the production posture, every
page measured against a floor page of the same server in the same run (issue 13).

Steps: build the data set in the bench database, or clone it from the cached template database
of the same scale, seed, month, generator and migrations; migrate; collect static files; count
each page's SQL queries in-process (Django's test client); start gunicorn on 127.0.0.1 with
PORTAL_ENV=production; sign the bench accounts in through the session engine; time each page
sequentially and from concurrent clients (the fixed mode), then the varied mode (URLs from
pools, beat running: `bench.varied`); read the workers' peak RSS; measure the batch
work; write results.json and results.md with every target met or missed. Request counts and
time are bounded; nothing leaves the machine.

Run after `django.setup()` with DATABASE_URL set to the bench database (`bench.__main__`
does both).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import time
from typing import Any

from django.core.management import call_command
from django.db import connections
from django.urls import Resolver404, resolve

from billing.models import Invoice
from inventory.models import Node
from tenants.models import Workload

from . import dataset, varied
from .billing_runs import measure_ingestion, measure_invoicing
from .database import prepare_data_set
from .measure import (
    count_queries,
    pool,
    session_cookies,
    summarise,
    time_latencies,
    time_page,
    warm_up,
    window_spread,
)
from .options import BASE_DIR, Options, options_from_environment
from .pages import FLOOR, PAGES, TARGET_RATIO, VARIED_TARGET_RATIO, WEB_RSS_TARGET_MIB
from .provisioning import measure_provisioning
from .provisioning_clusters import measure_two_clusters
from .report import evaluate_targets, query_counts_by_scale, render_markdown
from .server import collect_static, free_port, peak_rss_mib, start_server, stop_process, worker_pids
from .worker import measure_celery_worker

__all__ = ["options_from_environment", "run"]


def objects_for_paths() -> dict[str, Any]:
    tenant = dataset.BENCH_TENANT
    workload = (Workload.objects.filter(tenant__slug=tenant, status="ready")
                .order_by("id").values_list("id", flat=True).first())
    invoice, period_start = (Invoice.objects.exclude(status="draft")
                             .order_by("-period_start", "id")
                             .values_list("id", "period_start").first() or (None, None))
    return {"tenant": tenant, "workload": workload,
            "node": Node.objects.order_by("id").values_list("id", flat=True).first(),
            "invoice": invoice,
            "month": f"{period_start:%Y-%m}" if period_start else None}


def resolves(path: str) -> bool:
    try:
        resolve(path.split("?", 1)[0])
    except Resolver404:
        return False
    return True


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
                               "api": page.api, "note": page.note, "targeted": page.targeted}
        if page.beyond_default:
            row["beyond_default"] = page.beyond_default
        missing = [key for key in _placeholders(page.path) if objects.get(key) is None]
        if not resolves(path):
            if not page.planned:
                raise SystemExit(f"{page.name}: {path} does not resolve (bench/pages.py)")
            row["skipped"] = "not built yet"
        elif missing:
            row["skipped"] = f"no {', '.join(missing)} in the data set"
        else:
            row |= count_queries(page, path, cookies[page.user])
        rows.append(row)
    log("Varied mode: building its URL pools, each URL asked once in-process …")
    prepared = varied.prepare(options, cookies, log)
    connections.close_all()

    port = free_port()
    server = start_server(options, port, options.out / "gunicorn.log")
    try:
        for row in rows:
            if "skipped" not in row and row["status"] != 200:
                row["skipped"] = f"answered {row['status']} in-process"
        measured = [row for row in rows if "skipped" not in row]
        warm_up(port, measured, cookies, options)
        # The floor is timed before every page, and its figures are those of all its requests:
        # one window of a few seconds is the least steady figure of a run, and a page's
        # verdict is a ratio to it.
        floor = next(row for row in measured if row["name"] == FLOOR)
        floor_windows = []
        for row in measured:
            if row is not floor:
                log(f"  timing {row['name']} (and the floor before it) …")
                floor_windows.append(time_latencies(port, floor["path"], cookies[floor["user"]],
                                                    options))
                row |= time_page(port, row["path"], cookies[row["user"]], options)
        floor |= summarise(pool(floor_windows)) | {"floor_windows": window_spread(floor_windows)}
        after_fixed = [peak_rss_mib(pid) for pid in worker_pids(server.pid)]
        varied_results = varied.run(port, prepared, cookies, options,
                                    worker_pids(server.pid), log)
        workers = {pid: peak_rss_mib(pid) for pid in worker_pids(server.pid)}
        master_rss = peak_rss_mib(server.pid)
    finally:
        stop_process(server)

    floor = next(row for row in rows if row["name"] == FLOOR)
    for row in rows:
        if "sequential" in row and "sequential" in floor:
            for mode in ("sequential", "concurrent"):
                row[mode]["p95_ratio"] = round(row[mode]["p95_ms"] / floor[mode]["p95_ms"], 2)
                row[mode]["median_ratio"] = round(
                    row[mode]["median_ms"] / floor[mode]["median_ms"], 2)
                # Against the floor's first window alone (how runs before 2026-12-03 read it).
                row[mode]["p95_ratio_first_window"] = round(
                    row[mode]["p95_ms"] / floor["floor_windows"][mode]["first_p95_ms"], 2)
            if row["targeted"]:
                row["meets_target"] = row["concurrent"]["p95_ratio"] <= TARGET_RATIO
    # Billing's batch work, a Celery worker and provisioning, after the pages (the last two
    # write to the bench database; the first two roll back).
    log("  timing usage ingestion against COPY …")
    batch = [measure_ingestion(hours=options.meter_hours)]
    log("  timing month-end invoicing against SQL …")
    batch.append(measure_invoicing())
    connections.close_all()
    log("  running a Celery worker …")
    batch.append(measure_celery_worker(options, redis_url=options.redis_url,
                                       hours=options.celery_hours))
    celery_rss = batch[-1].get("portal_value")
    # Last: it sets the data set's workloads aside and launches workloads of its own.
    connections.close_all()
    log(f"  provisioning {options.provision_workloads} workloads through Celery and the "
        "Kubernetes emulator …")
    batch.append(measure_provisioning(options))
    provisioning_rss = batch[-1].get("details", {}).get("worker_peak_rss_mib")
    connections.close_all()
    log(f"  provisioning on two clusters, one slow ({options.provision_cluster_workloads} "
        "workloads a phase) …")
    batch.append(measure_two_clusters(options))
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
            "varied_target_p95_ratio": VARIED_TARGET_RATIO,
            "web_rss_target_mib": WEB_RSS_TARGET_MIB,
        },
        "data_set": data_set,
        "pages": rows,
        "varied": varied_results,
        "batch": batch,
        "memory": {"web_worker_peak_rss_mib": max(known) if known else None,
                   "web_worker_peak_rss_after_fixed_mib":
                       max((rss for rss in after_fixed if rss is not None), default=None),
                   "web_workers_mib": {str(pid): rss for pid, rss in workers.items()},
                   "gunicorn_master_peak_rss_mib": master_rss,
                   "celery_worker_peak_rss_mib": celery_rss,
                   "provisioning_worker_peak_rss_mib": provisioning_rss},
        "not_measured_yet": [
            *(f"{row['name']} ({row['skipped']})" for row in batch if "skipped" in row),
        ],
    }
    results["query_counts_by_scale"] = query_counts_by_scale(options, rows,
                                                             varied_results["groups"])
    results["targets"] = evaluate_targets(results)
    (options.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    markdown = render_markdown(results)
    (options.out / "results.md").write_text(markdown)
    log(markdown)
    return results


def _placeholders(path: str) -> list[str]:
    return [part.split("}", 1)[0] for part in path.split("{")[1:]]


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BASE_DIR,  # noqa: S607
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return ""


