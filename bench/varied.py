"""The varied mode: `BENCH_CONCURRENCY` clients, each request a URL picked from a pool (other
tenants, pages, filters, invoices, date ranges: `bench.pools`), while a Celery worker
runs what beat runs in production (the observe sweep, metering).

Before the server starts, `prepare` reads the facts the pools are built from, walks the list
APIs along their `next` links, and asks every URL of every pool once in-process (Django's test
client), counting its SQL queries: the pools hold only URLs that answer, and each group's
query count is the most any of its URLs made. `run` then times the schedule against the server
with `Beat` sending the tasks to a worker of its own; the worker and its queues end with it.
"""

from __future__ import annotations

import datetime
import queue as queues
import threading
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection, connections
from django.db.models import Count, Max, Min
from django.test import Client
from django.test.utils import CaptureQueriesContext

from billing.models import Invoice, UsageDaily, UsageRecord
from inventory.models import GPU, Node, Site
from inventory.selectors.nodes import NodeHealth
from tenants.models import Membership, QuotaRequest, Tenant, Workload

from .measure import attempt, latency_summary, login_cookies
from .options import Options
from .pages import FLOOR, VARIED_TARGET_RATIO
from .pools import Facts, Group, Target, api_starts, build_groups, owner_usernames, schedule
from .provisioning import forget_queues, wait_for_workers
from .server import peak_rss_mib, stop_process
from .worker import start_celery_worker

OBSERVE_SWEEP = "tenants.workloads.tasks.workloads_observe_sweep_task"
METER = "billing.tasks.usage_meter_task"
HOUR = datetime.timedelta(hours=1)


def gather_facts() -> Facts:
    """What the pools are built from, read from the bench database."""
    owners = tuple(
        Membership.objects.filter(role="owner", tenant__status="active")
        .order_by("tenant_id").values_list("tenant__slug", "user__username")
    )
    span = UsageRecord.objects.aggregate(first=Min("hour"), last=Max("hour"))
    last = span["last"] or datetime.datetime.now(tz=datetime.UTC)
    start = last.date().replace(day=1)
    usage_tenants = tuple(
        UsageDaily.objects.filter(day__gte=start, source=UsageRecord.Source.ALLOCATED)
        .values_list("tenant__slug", flat=True).distinct().order_by("tenant__slug")
    )
    return Facts(
        tenant_owners=owners,
        node_count=Node.objects.count(),
        sites=tuple(Site.objects.order_by("slug").values_list("slug", flat=True)),
        gpu_models=tuple(GPU.objects.order_by("model").values_list("model", flat=True)
                         .distinct()),
        node_states=tuple(Node.objects.order_by("state").values_list("state", flat=True)
                          .distinct()),
        node_healths=tuple(NodeHealth.values),
        invoice_ids=tuple(Invoice.objects.order_by("id").values_list("id", flat=True)),
        request_counts=dict(QuotaRequest.objects.order_by().values_list("status")
                            .annotate(n=Count("id")).values_list("status", "n")),
        request_resources=tuple(
            QuotaRequest.objects.filter(status="submitted").order_by("lines__resource")
            .values_list("lines__resource", flat=True).distinct().exclude(lines__resource=None)
        ),
        request_tenants=tuple(
            Tenant.objects.filter(quota_requests__status="submitted").order_by("slug")
            .values_list("slug", flat=True).distinct()
        ),
        workload_kinds=tuple(Workload.objects.order_by("kind").values_list("kind", flat=True)
                             .distinct()),
        usage_start=start,
        usage_days=(last.date() - start).days + 1,
        usage_tenants=usage_tenants,
    )


def _visit(client: Client, path: str) -> tuple[int, int, bytes]:
    """One in-process GET: status, SQL queries, body."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    body = b"".join(response) if response.streaming else response.content
    return response.status_code, len(queries), body


def _client(cookie: str) -> Client:
    client = Client(HTTP_HOST="127.0.0.1")
    client.cookies[settings.SESSION_COOKIE_NAME] = cookie
    return client


def _walk(client: Client, start: str, pages: int) -> list[tuple[str, int]]:
    """The list API's pages from `start` along `next`: (path, queries) of each page read."""
    import json

    seen, path = [], start
    while path and len(seen) < pages:
        status, queries, body = _visit(client, path)
        if status != 200:
            break
        seen.append((path, queries))
        following = json.loads(body).get("next") if body else None
        path = None
        if following:
            parts = urlsplit(following)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
    return seen


def prepare(options: Options, cookies: dict[str, str], log) -> dict[str, Any]:
    """The pools, each URL asked once in-process: {"groups": [...], "queries": {...},
    "dropped": {...}}. Adds a session per tenant owner the pools sign in as to `cookies`.

    Each group is warmed by asking one of its URLs first (a view's first request in a process
    sets up what the process keeps); that URL's count, then a second ask, is left out, so that
    every count is of a URL asked for the first time, as most of the varied mode's are."""
    started = time.perf_counter()
    facts = gather_facts()
    admin = _client(cookies["admin"])
    api_pages: dict[str, list[str]] = {}
    counted: dict[str, tuple[list[str], list[int]]] = {}  # the paths counted, their queries
    for name, starts in api_starts(facts).items():
        warmed = starts[0][0]
        admin.get(warmed)
        for start, pages in starts:
            for path, queries in _walk(admin, start, pages):
                api_pages.setdefault(name, []).append(path)
                if path != warmed:
                    counted.setdefault(name, ([], []))[0].append(path)
                    counted[name][1].append(queries)
        if name in api_pages and name not in counted:  # one page in all: counted asked again
            counted[name] = ([warmed], [_visit(admin, warmed)[1]])
    groups = build_groups(facts, api_pages, floor_path="/bench/floor/", seed=options.seed)
    cookies |= login_cookies(owner_usernames(groups), prefix="owner:")
    kept, dropped = [], {}
    for group in groups:
        if group.name in api_pages:
            kept.append(group)
            continue
        clients = {user: _client(cookies[user]) for user in {t.user for t in group.targets}}
        first = group.targets[0]
        warm_status, _, _ = _visit(clients[first.user], first.path)
        answering, paths, queries, refused = [], [], [], []
        for target in group.targets:
            if target is first and len(group.targets) > 1:
                status, count = warm_status, None
            else:
                status, count, _ = _visit(clients[target.user], target.path)
            if status != 200:
                refused.append(f"{target.path} ({status})")
                continue
            answering.append(target)
            if count is not None:
                paths.append(target.path)
                queries.append(count)
        if refused:
            dropped[group.name] = refused
            log(f"  varied mode: {len(refused)} URLs of {group.name} left out, "
                f"e.g. {refused[0]}")
        if answering and not queries:  # only the warmed URL answered: counted asked again
            paths, queries = [first.path], [_visit(clients[first.user], first.path)[1]]
        if answering:
            kept.append(Group(group.name, group.fixed, tuple(answering)))
            counted[group.name] = (paths, queries)
    connections.close_all()
    log(f"  varied mode: {sum(len(group.targets) for group in kept)} URLs in {len(kept)} "
        f"groups, each asked in-process, in {time.perf_counter() - started:.1f} s.")
    return {"groups": kept, "dropped": dropped,
            "queries": {name: {"max": max(counts), "min": min(counts),
                               "most_at": paths[counts.index(max(counts))]}
                        for name, (paths, counts) in counted.items() if counts}}


class Beat(threading.Thread):
    """Production's beat for the run: the observe sweep every `sweep_every` seconds and a
    metering window every `meter_every` (hourly in production; often enough here that the
    mode sees it), each first at once. Metering re-meters the usage month's last hours in
    turn."""

    def __init__(self, app, queue: str, *, sweep_every: float, meter_every: float,
                 hours: list[datetime.datetime]) -> None:
        super().__init__(name="bench-varied-beat", daemon=True)
        self.app, self.queue = app, queue
        self.every = {OBSERVE_SWEEP: sweep_every, METER: meter_every}
        self.hours = hours
        self.sent: list[tuple[str, datetime.datetime, Any]] = []  # task, sent at, result
        self._halt = threading.Event()

    def _send(self, task: str) -> None:
        args = []
        if task == METER:
            metered = sum(1 for name, _, _ in self.sent if name == METER)
            args = [self.hours[metered % len(self.hours)].isoformat()]
        self.sent.append((task, datetime.datetime.now(tz=datetime.UTC),
                          self.app.send_task(task, args=args, queue=self.queue)))

    def run(self) -> None:
        due = {task: 0.0 for task in self.every if self.every[task] > 0 and
               (task != METER or self.hours)}
        if not due:
            return
        started = time.monotonic()
        while not self._halt.is_set():
            now = time.monotonic() - started
            for task, at in due.items():
                if now >= at:
                    self._send(task)
                    due[task] = at + self.every[task]
            self._halt.wait(max(0.05, min(due.values()) - (time.monotonic() - started)))

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(timeout=10)

    def tally(self, mode_ended: datetime.datetime) -> dict[str, Any]:
        """Per task: how many were sent, done (a task running when the worker was stopped
        finishes first), done before the mode ended, failed, and the most seconds one took
        from being sent to done (its wait in the queue included)."""
        tally: dict[str, Any] = {}
        for task, sent_at, result in self.sent:
            entry = tally.setdefault(task.rsplit(".", 1)[1], {
                "sent": 0, "done": 0, "done_in_mode": 0, "failed": 0, "most_seconds": None})
            entry["sent"] += 1
            state = result.state
            entry["failed"] += state == "FAILURE"
            if state != "SUCCESS":
                continue
            entry["done"] += 1
            done_at = result.date_done
            if done_at is None:
                continue
            if done_at.tzinfo is None:
                done_at = done_at.replace(tzinfo=datetime.UTC)
            entry["done_in_mode"] += done_at <= mode_ended
            took = round((done_at - sent_at).total_seconds(), 1)
            entry["most_seconds"] = max(entry["most_seconds"] or 0, took)
        return tally


def _start_worker(options: Options, run_id: str, queue: str, sink: str):
    hostname = f"bench-varied-{run_id}@{_hostname()}"
    app, worker, log = start_celery_worker(options, queue=queue, sink=sink, hostname=hostname,
                                           log_name="varied-worker.log")
    return app, worker, log, hostname


def _hostname() -> str:
    import socket

    return socket.gethostname()


def _metering_hours(count: int) -> list[datetime.datetime]:
    last = UsageRecord.objects.aggregate(last=Max("hour"))["last"]
    return [] if last is None else [last - HOUR * n for n in range(count)]


def _time_schedule(port: int, requests: list[tuple[str, Target]], cookies: dict[str, str],
                   options: Options, deadline_seconds: float) -> dict[str, Any]:
    """The requests from `options.concurrency` clients, each taking the next one; per group
    its latencies (seconds) and errors."""
    todo: queues.SimpleQueue[tuple[str, Target]] = queues.SimpleQueue()
    for item in requests:
        todo.put(item)
    latencies: dict[str, list[float]] = {}
    errors: dict[str, list[int | str]] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + deadline_seconds

    def client() -> None:
        while time.monotonic() < deadline:
            try:
                name, target = todo.get_nowait()
            except queues.Empty:
                return
            started = time.perf_counter()
            status = attempt(port, target.path, cookies[target.user])
            took = time.perf_counter() - started
            with lock:
                latencies.setdefault(name, []).append(took)
                if status != 200:
                    errors.setdefault(name, []).append(status)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(options.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"latencies": latencies, "errors": errors,
            "elapsed": time.perf_counter() - started}


def run(port: int, prepared: dict[str, Any], cookies: dict[str, str], options: Options,
        web_workers: list[int], log) -> dict[str, Any]:
    """The varied mode against the server on `port`, beat running; its figures per group."""
    groups: list[Group] = prepared["groups"]
    requests = schedule(groups, options.requests, seed=options.seed)
    deadline_seconds = options.seconds_per_mode * len(groups)
    run_id = uuid.uuid4().hex[:8]
    queue, sink = f"bench-varied-{run_id}", f"bench-varied-{run_id}-follow-ups"
    hours = _metering_hours(options.celery_hours)
    connections.close_all()
    app, worker, worker_log, hostname = _start_worker(options, run_id, queue, sink)
    beat = Beat(app, queue, sweep_every=options.varied_sweep_seconds,
                meter_every=options.varied_meter_seconds, hours=hours)
    try:
        if not wait_for_workers(app, [hostname], [worker]):
            raise SystemExit("The varied mode's Celery worker did not start "
                             f"(see {worker_log.name}).")
        log(f"  varied mode: {len(requests)} requests over {len(groups)} groups from "
            f"{options.concurrency} clients, beat running …")
        beat.start()
        timed = _time_schedule(port, requests, cookies, options, deadline_seconds)
        mode_ended = datetime.datetime.now(tz=datetime.UTC)
        beat.stop()
        worker_rss = peak_rss_mib(worker.pid)
        stop_process(worker, timeout=60)
        tally = beat.tally(mode_ended)
    finally:
        beat.stop()
        if worker.poll() is None:
            stop_process(worker, timeout=60)
        worker_log.close()
        for _, _, result in beat.sent:
            result.forget()
        forget_queues(options.redis_url, queue, sink)
        app.conf.update(result_backend=None)
    return summarise_groups(groups, prepared, timed) | {
        "beat": {"tasks": tally, "sweep_seconds": options.varied_sweep_seconds,
                 "meter_seconds": options.varied_meter_seconds,
                 "worker_peak_rss_mib": worker_rss},
        "web_workers_mib": {str(pid): peak_rss_mib(pid) for pid in web_workers},
        "requests": sum(len(values) for values in timed["latencies"].values()),
        "scheduled": len(requests),
        "seconds": round(timed["elapsed"], 1),
        "requests_per_second": round(
            sum(len(v) for v in timed["latencies"].values()) / timed["elapsed"], 1)
        if timed["elapsed"] else None,
    }


def summarise_groups(groups: list[Group], prepared: dict[str, Any],
                     timed: dict[str, Any]) -> dict[str, Any]:
    """Per group: URLs in its pool, requests, errors, queries, median and p95 (ms) and the
    p95 ÷ the floor's p95 of the same mode."""
    rows = []
    for group in groups:
        latencies = timed["latencies"].get(group.name, [])
        errors = timed["errors"].get(group.name, [])
        row: dict[str, Any] = {
            "name": group.name, "fixed": group.fixed, "urls": len(group.targets),
            "users": len({target.user for target in group.targets}),
            "queries": prepared["queries"].get(group.name),
            "errors": len(errors), "error_statuses": sorted(set(errors), key=str),
            "dropped": len(prepared["dropped"].get(group.name, [])),
        }
        if latencies:
            row |= latency_summary(latencies)
        rows.append(row)
    floor = next((row for row in rows if row["name"] == FLOOR and "p95_ms" in row), None)
    for row in rows:
        if floor and "p95_ms" in row:
            row["p95_ratio"] = round(row["p95_ms"] / floor["p95_ms"], 2)
            row["median_ratio"] = round(row["median_ms"] / floor["median_ms"], 2)
    return {"groups": rows, "target_p95_ratio": VARIED_TARGET_RATIO}
