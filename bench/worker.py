"""A Celery worker's peak memory while it runs the portal's tasks (issue 13).

A real `celery -A portal worker` (solo pool, one process: the one that runs the tasks) on the
bench database and Redis (`BENCH_REDIS_URL`), in the production posture, consuming a queue of
this run's own. The harness sends it a cheap task first (expired sessions cleared) and reads
the worker's resident set once that is done (the floor: a started worker), then
`BENCH_CELERY_HOURS` metering windows of the data set's usage month (`usage_meter_task`, each
re-metering one hour from the workloads' histories) and the month-end invoicing
(`invoices_month_end_task`: every tenant's draft), and reads its peak RSS (`VmHWM`).

Whatever the tasks queue in turn (the sweeps a worker queues when it starts, follow-ups) goes
to another queue of the run, which nobody consumes and which is deleted afterwards: the worker
runs exactly the tasks sent, so the run is bounded. They write to the bench database, a clone
replaced on every run (this runs last).
"""

from __future__ import annotations

import datetime
import subprocess
import sys
import time
import uuid
from typing import Any

from celery.exceptions import TimeoutError as CeleryTimeout
from django.db.models import Max

from billing.models import UsageRecord

from .options import BASE_DIR, Options
from .server import peak_rss_mib, server_environment, stop_process

RSS_TARGET_MIB = 300
TASK_TIMEOUT = 600


def _current_rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def start_celery_worker(options: Options, *, queue: str, sink: str, hostname: str,
                        log_name: str, extra_env: dict[str, str] | None = None):
    """A Celery worker (solo pool, production posture) on the bench database and broker,
    taking `queue` (its follow-up tasks go to `sink`, which nobody takes), logging to
    `log_name` in the run's folder; this process's Celery app pointed at the same broker.
    Answers (app, worker process, open log)."""
    from portal.celery import app

    redis_url = options.redis_url
    app.conf.update(task_always_eager=False, broker_url=redis_url, result_backend=redis_url,
                    task_default_queue=queue)
    app._after_fork()  # no pooled connection to another broker
    env = server_environment(options) | {
        "CELERY_BROKER_URL": redis_url, "CELERY_RESULT_BACKEND": redis_url,
        "CELERY_TASK_ALWAYS_EAGER": "false", "CELERY_TASK_DEFAULT_QUEUE": sink,
    } | (extra_env or {})
    env.pop("PROMETHEUS_URL", None)  # measured metering off: no network
    log = (options.out / log_name).open("wb")
    worker = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo",
         "--concurrency=1", "--without-heartbeat", "--without-gossip", "--without-mingle",
         "-Q", queue, "--loglevel=WARNING", f"--hostname={hostname}"],
        cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    return app, worker, log


def measure_celery_worker(options: Options, *, redis_url: str, hours: int) -> dict[str, Any]:
    import redis


    last = UsageRecord.objects.aggregate(last=Max("hour"))["last"]
    if last is None:
        return {"name": "Celery worker peak RSS", "skipped": "no usage records in the data set"}
    run = uuid.uuid4().hex[:8]
    queue, sink = f"bench-{run}", f"bench-{run}-follow-ups"
    # Invoicing every tenant is one task: let it finish at fleet scale.
    app, worker, log = start_celery_worker(
        options, queue=queue, sink=sink, hostname=f"bench-{run}@%h", log_name="celery-worker.log",
        extra_env={"CELERY_TASK_TIME_LIMIT": str(TASK_TIMEOUT),
                   "CELERY_VISIBILITY_TIMEOUT": "3600"},
    )
    failures: list[str] = []
    sent = []
    try:
        started = time.perf_counter()
        first = app.send_task("portal.tasks.clear_expired_sessions", queue=queue)
        sent.append(first)
        try:
            first.get(timeout=120, propagate=False)
        except CeleryTimeout:
            return {"name": "Celery worker peak RSS",
                    "skipped": f"the worker ran no task in 120 s (see {log.name})"}
        ready_seconds = time.perf_counter() - started
        floor = _current_rss_mib(worker.pid)
        hour_list = [last - datetime.timedelta(hours=n) for n in range(hours)]
        started = time.perf_counter()
        results = [app.send_task("billing.tasks.usage_meter_task", args=[hour.isoformat()],
                                 queue=queue) for hour in hour_list]
        results.append(app.send_task("billing.tasks.invoices_month_end_task", queue=queue))
        sent += results
        for result in results:
            result.get(timeout=TASK_TIMEOUT, propagate=False)
            if result.state != "SUCCESS":
                failures.append(f"{result.state}: {result.result!r}"[:300])
        tasks_seconds = time.perf_counter() - started
        peak = peak_rss_mib(worker.pid)
    finally:
        stop_process(worker, timeout=60)
        log.close()
        for result in sent:
            result.forget()
        client = redis.Redis.from_url(redis_url)
        client.delete(*(f"{prefix}{name}" for name in (queue, sink)
                        for prefix in ("", "_kombu.binding.", "_kombu.binding_permanent.")),
                      f"{queue}\x06\x163", f"{sink}\x06\x163")
        app.conf.update(result_backend=None)
    return {
        "name": "Celery worker peak RSS", "unit": "MiB",
        "portal": f"{hours} metering windows + month-end invoicing",
        "floor": "the worker once started",
        "portal_value": peak, "floor_value": floor,
        "ratio": round(peak / floor, 2) if peak and floor else None,
        "target": f"< {RSS_TARGET_MIB} MiB",
        "meets_target": peak is not None and peak < RSS_TARGET_MIB and not failures,
        "details": {"tasks": len(results) + 1, "failures": failures,
                    "start_seconds": round(ready_seconds, 2),
                    "tasks_seconds": round(tasks_seconds, 2), "pool": "solo"},
    }
