"""Provisioning throughput: workloads launched through the API and driven to ready by real
Celery workers over Redis against the Kubernetes API emulator (issue 13).

The emulator (the tests' kmock-based one, `tests/support/kube_emulator.py`) runs in this process
on a free port of 127.0.0.1. `BENCH_PROVISION_WORKERS` real `celery -A portal worker` processes
(solo pool: each is the process that runs the tasks) run in the production posture on the bench
database and Redis with `FLEET_BACKEND=kubernetes` and a kubeconfig of the emulator, consuming a
queue of the run's own; gunicorn (production posture) queues there too. Then, as the bench
owner with an API token, `BENCH_PROVISION_WORKLOADS` workloads of `BENCH_PROVISION_KINDS` in turn
are launched (`POST /api/v1/workloads/`, from `BENCH_CONCURRENCY` clients) into the bench tenant,
whose quota is raised to fit them; `Controllers` brings up what the portal creates, and the
harness plays beat: the observe sweep every `BENCH_PROVISION_SWEEP_SECONDS` (production's
`WORKLOAD_OBSERVE_SECONDS` by default). It waits (at most `BENCH_PROVISION_TIMEOUT`) until every
workload is ready in the database.

Reported: workloads per second (launched to all ready), the requests the emulator received per
workload (by verb and resource, discovery apart), the objects the portal created per workload
(the distinct objects it created or applied), the target (requests per workload at most the
objects it owns plus two), and the workers' peak RSS (`VmHWM`, target < 300 MiB).

The data set's own workloads are set aside first (marked deleted): the emulator holds none of
their objects, and the sweeps would otherwise find them all gone and apply them again. What
the workers queue in turn (the sweeps a worker queues at start, notifications) goes to another
queue of the run that nobody consumes, deleted afterwards. It writes to the bench database:
it runs last.
"""

from __future__ import annotations

import http.client
import json
import logging
import queue as queues
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from typing import Any

from django.db import connections
from django.db.models import Count
from django.utils import timezone

from . import dataset
from .controllers import Controllers
from .options import BASE_DIR, REQUEST_TIMEOUT, Options
from .report import PROVISIONING
from .server import free_port, peak_rss_mib, server_environment, start_server, stop_process

NAME = PROVISIONING
RSS_TARGET_MIB = 300
EXTRA_REQUESTS = 2  # the target: requests per workload ≤ objects it owns + 2
WORKER_START_TIMEOUT = 120
SSH_KEY = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJxzqTKk2PRhAenYTuIaHAg1JffULaOZPmUUr46ou8oH "
           "bench@portal")
APPLY = "application/apply-patch+yaml"


def _specs(gpu: str) -> dict[str, dict[str, Any]]:
    """A small one of each kind (one GPU where the kind takes GPUs)."""
    return {
        "inference": {"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "gpu": gpu,
                      "gpus_per_replica": 1, "min_replicas": 1, "max_replicas": 1},
        "vcluster": {"kubernetes_version": "1.35", "cpu": 2, "memory_gib": 4},
        "vm": {"custom_image": "quay.io/containerdisks/ubuntu:24.04", "default_user": "ubuntu",
               "cpu": 2, "memory_gib": 8, "disk_gib": 40, "gpu": gpu, "gpus": 1,
               "running": True, "ssh_public_key": SSH_KEY},
        "slurm": {"workers": 1, "gpu": gpu, "gpus_per_worker": 1, "cpu_per_worker": 4,
                  "memory_gib_per_worker": 16},
    }


def _whole_gpu(tenant) -> str:
    from tenants.workloads.selectors import launch_context

    offers = [offer.resource for offer in launch_context(tenant=tenant).gpu_offers
              if offer.resource.startswith("gpu:")]
    if not offers:
        raise LookupError(f"{tenant.slug}'s pool offers no whole GPU")
    return offers[0]


def _set_aside_data_set_workloads() -> int:
    """Mark the data set's live workloads deleted: the emulator holds none of their objects."""
    from tenants.workloads.models import Workload, WorkloadStatus

    return Workload.objects.exclude(status=WorkloadStatus.DELETED).update(
        status=WorkloadStatus.DELETED, deleted_at=timezone.now())


def _plan(tenant, options: Options, run: str) -> list[dict[str, Any]]:
    """The launches, kinds in turn, and the tenant's quota raised to hold them all at once."""
    from tenants.quota.models import Quota
    from tenants.workloads.services.lifecycle import workload_validate

    gpu = _whole_gpu(tenant)
    specs = _specs(gpu)
    kinds = options.provision_kinds
    # A spec is validated against the quota too: room for everything first, then exactly
    # what the launches take at once.
    roomy = options.provision_workloads * 1024
    for resource in (gpu, "cpu", "memory-gib", "storage-gib", *(f"count:{k}" for k in kinds)):
        Quota.objects.update_or_create(tenant=tenant, resource=resource,
                                       defaults={"limit": roomy})
    launches = [{"tenant": tenant.slug, "kind": kinds[i % len(kinds)],
                 "name": f"prov-{run[:4]}-{i:05d}", "spec": specs[kinds[i % len(kinds)]]}
                for i in range(options.provision_workloads)]
    needed: Counter[str] = Counter()
    for kind in kinds:
        _, demand = workload_validate(tenant=tenant, kind=kind, spec=specs[kind])
        times = sum(1 for launch in launches if launch["kind"] == kind)
        for resource, amount in demand.items():
            needed[resource] += int(amount) * times
    for resource, amount in needed.items():
        Quota.objects.update_or_create(tenant=tenant, resource=resource,
                                       defaults={"limit": amount})
    return launches


def _post(port: int, token: str, body: dict[str, Any]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        conn.request("POST", "/api/v1/workloads/", body=json.dumps(body), headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Accept": "application/json", "X-Forwarded-Proto": "https",
        })
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _launch_all(port: int, token: str, launches: list[dict[str, Any]],
                clients: int) -> Counter[int]:
    """POST every launch from `clients` clients; the answers' statuses counted."""
    todo: queues.SimpleQueue[dict[str, Any]] = queues.SimpleQueue()
    for launch in launches:
        todo.put(launch)
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def client() -> None:
        while True:
            try:
                launch = todo.get_nowait()
            except queues.Empty:
                return
            try:
                status = _post(port, token, launch)
            except OSError:
                status = 0
            with lock:
                statuses[status] += 1

    threads = [threading.Thread(target=client) for _ in range(max(1, clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


class Beat(threading.Thread):
    """What beat does for workloads: the observe sweep every `every` seconds."""

    def __init__(self, app, queue: str, every: float) -> None:
        super().__init__(name="bench-beat", daemon=True)
        self.app, self.queue, self.every = app, queue, every
        self.sent = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(self.every):
            self.app.send_task("tenants.workloads.tasks.workloads_observe_sweep_task",
                               queue=self.queue)
            self.sent += 1

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(timeout=10)


def start_worker(env: dict[str, str], hostname: str, queues: list[str],
                 log) -> subprocess.Popen:
    """A Celery worker (solo pool: the process that runs the tasks) taking `queues`."""
    return subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo",
         "--concurrency=1", "--without-heartbeat", "--without-gossip", "--without-mingle",
         "-Q", ",".join(queues), "--loglevel=WARNING", f"--hostname={hostname}"],
        cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
    )


def stop_workers(workers: list[subprocess.Popen], logs: list[Any]) -> None:
    for process in workers:
        process.terminate()  # every worker told at once, then each waited for
    for process in workers:
        stop_process(process, timeout=60)
    for log in logs:
        log.close()


def wait_for_workers(app, hostnames: list[str], processes: list[subprocess.Popen]) -> bool:
    deadline = time.monotonic() + WORKER_START_TIMEOUT
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            return False
        answered = {name for reply in app.control.ping(destination=hostnames, timeout=1.0)
                    for name in reply}
        if answered >= set(hostnames):
            return True
    return False


def _wait_until_done(ids: list[int], deadline: float) -> dict[str, int]:
    """Poll the database until every workload is ready or failed, or the deadline."""
    from tenants.workloads.models import Workload

    while True:
        by_status = dict(Workload.objects.filter(pk__in=ids).values_list("status")
                         .annotate(n=Count("pk")).values_list("status", "n"))
        if by_status.get("ready", 0) + by_status.get("failed", 0) >= len(ids) \
                or time.monotonic() > deadline:
            connections.close_all()
            return by_status
        time.sleep(0.5)


def _resource_of(path: str) -> str | None:
    """The resource (plural) a request names, or None for discovery."""
    parts = path.strip("/").split("/")
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    return rest[0] if rest else None


def _verb(method: str, path: str, content_type: str) -> str:
    # /api/v1[/namespaces/N]/plural[/name], /apis/G/V[/namespaces/N]/plural[/name]
    parts = len(path.strip("/").split("/"))
    named = parts % 2 == (0 if path.startswith("/api/") else 1)
    if method == "GET":
        return "get" if named else "list"
    if method == "PATCH":
        return "apply" if APPLY in content_type else "patch"
    return {"POST": "create", "PUT": "update", "DELETE": "delete"}.get(method, method.lower())


def count_requests(seen: list[Any]) -> tuple[Counter[str], Counter[str]]:
    """The requests by `verb resource` (discovery apart), and the distinct objects the portal
    created or applied, by resource."""
    requests: Counter[str] = Counter()
    objects: dict[str, set[str]] = {}
    for request in seen:
        resource = _resource_of(request.path)
        if resource is None:
            requests["discovery"] += 1
            continue
        verb = _verb(request.method, request.path, request.content_type)
        requests[f"{verb} {resource}"] += 1
        if verb in ("apply", "create"):
            name = request.path if verb == "apply" else (
                f"{request.path}/{(request.data or {}).get('metadata', {}).get('name')}")
            objects.setdefault(resource, set()).add(name)
    return requests, Counter({resource: len(names) for resource, names in objects.items()})


def _ready_seconds(ids: list[int]) -> list[float]:
    from tenants.workloads.models import Workload

    return sorted((ready - created).total_seconds() for created, ready in
                  Workload.objects.filter(pk__in=ids, ready_at__isnull=False)
                  .values_list("created_at", "ready_at"))


def measure_provisioning(options: Options) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from core.tokens import api_token_create
    from portal.celery import app
    from tenants.access.models import Tenant
    from tenants.workloads.models import Workload
    from tests.support.kube_emulator import KubeEmulator  # the tests' emulator (kmock)

    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # a line per request
    count = options.provision_workloads
    run = uuid.uuid4().hex[:8]
    queue, sink = f"bench-{run}", f"bench-{run}-follow-ups"
    tenant = Tenant.objects.get(slug=dataset.BENCH_TENANT)
    owner = get_user_model().objects.get(username=dataset.BENCH_OWNER)
    set_aside = _set_aside_data_set_workloads()
    launches = _plan(tenant, options, run)
    token = api_token_create(user=owner, name=f"bench provisioning {run}").raw
    connections.close_all()

    emulator = KubeEmulator().start()
    kubeconfig = emulator.write_kubeconfig(options.out / "provisioning-kubeconfig.json")
    # No result backend, as in production: nothing waits for a task's result here.
    celery_env = {"CELERY_BROKER_URL": options.redis_url, "CELERY_TASK_ALWAYS_EAGER": "false"}
    app.conf.update(task_always_eager=False, broker_url=options.redis_url,
                    result_backend=None, task_default_queue=queue)
    app._after_fork()  # no pooled connection to another broker
    worker_env = server_environment(options) | celery_env | {
        "CELERY_TASK_DEFAULT_QUEUE": sink, "FLEET_BACKEND": "kubernetes",
        "KUBECONFIG": str(kubeconfig), "KUBE_CONTEXT": "",
    }
    worker_env.pop("PROMETHEUS_URL", None)
    hostnames = [f"bench-{run}-{n}@{socket.gethostname()}"
                 for n in range(options.provision_workers)]
    logs = [(options.out / f"provisioning-worker-{n}.log").open("wb")
            for n in range(options.provision_workers)]
    workers = [start_worker(worker_env, hostname, [queue], log)
               for hostname, log in zip(hostnames, logs, strict=True)]
    port = free_port()
    server = None
    controllers = Controllers(emulator).start()
    beat = Beat(app, queue, options.provision_sweep_seconds)
    result: dict[str, Any] = {"name": NAME}
    try:
        server = start_server(options, port, options.out / "provisioning-gunicorn.log",
                              extra_env=celery_env | {"CELERY_TASK_DEFAULT_QUEUE": queue})
        if not wait_for_workers(app, hostnames, workers):
            return result | {"skipped": "the Celery workers did not start (see "
                                        "provisioning-worker-*.log)"}
        started = time.perf_counter()
        beat.start()
        statuses = _launch_all(port, token, launches, options.concurrency)
        launch_seconds = time.perf_counter() - started
        ids = list(Workload.objects.filter(
            tenant=tenant, name__in=[launch["name"] for launch in launches]
        ).values_list("pk", flat=True))
        by_status = _wait_until_done(ids, time.monotonic() + options.provision_timeout)
        seconds = time.perf_counter() - started
        beat.stop()
        seen = emulator.requests()
        rss = {str(process.pid): peak_rss_mib(process.pid) for process in workers}
    finally:
        beat.stop()
        controllers.stop()
        stop_workers(workers, logs)
        if server is not None:
            stop_process(server)
        emulator.stop()
        forget_queues(options.redis_url, queue, sink)
    return result | _figures(count, ids, by_status, statuses, seen, rss, controllers, {
        "seconds": seconds, "launch_seconds": launch_seconds, "set_aside": set_aside,
        "sweeps": beat.sent, "options": options,
    })


def _figures(count: int, ids: list[int], by_status: dict[str, int], statuses: Counter[int],
             seen: list[Any], rss: dict[str, float | None], controllers: Controllers,
             run: dict[str, Any]) -> dict[str, Any]:
    options: Options = run["options"]
    requests, owned = count_requests(seen)
    total_requests, total_owned = sum(requests.values()), sum(owned.values())
    ready = by_status.get("ready", 0)
    per_workload = round(total_requests / count, 2) if count else None
    owned_per_workload = round(total_owned / count, 2) if count else None
    target = round(owned_per_workload + EXTRA_REQUESTS, 2) if count else None
    peaks = [value for value in rss.values() if value is not None]
    peak = max(peaks) if peaks else None
    ready_seconds = _ready_seconds(ids)
    rate = round(ready / run["seconds"], 2) if run["seconds"] else None
    return {
        "unit": "requests/workload",
        "portal": f"{count:,} workloads ({', '.join(options.provision_kinds)}) launched → ready, "
                  f"{options.provision_workers} workers",
        "floor": "objects owned + 2",
        "portal_value": per_workload,
        "floor_value": target,
        "ratio": round(per_workload / target, 2) if per_workload and target else None,
        "target": f"≤ objects owned + {EXTRA_REQUESTS} per workload",
        "meets_target": bool(count and ready == count and per_workload <= target
                             and not controllers.errors),
        "details": {
            "workloads": count, "ready": ready, "by_status": by_status,
            "launch_answers": {str(status): n for status, n in sorted(statuses.items())},
            "workloads_per_second": rate,
            "seconds": round(run["seconds"], 2),
            "launch_seconds": round(run["launch_seconds"], 2),
            "launches_per_second": round(count / run["launch_seconds"], 2)
            if run["launch_seconds"] else None,
            "ready_after_seconds": {
                "median": round(statistics.median(ready_seconds), 2) if ready_seconds else None,
                "p95": round(ready_seconds[min(len(ready_seconds) - 1,
                                               int(0.95 * len(ready_seconds)))], 2)
                if ready_seconds else None,
            },
            "kube_requests": total_requests,
            "kube_requests_per_workload": per_workload,
            "kube_requests_by_kind": dict(requests.most_common()),
            "objects_owned": total_owned,
            "objects_owned_per_workload": owned_per_workload,
            "objects_owned_by_kind": dict(owned.most_common()),
            "workers": options.provision_workers, "pool": "solo",
            "worker_peak_rss_mib": peak, "workers_peak_rss_mib": rss,
            "worker_rss_target": f"< {RSS_TARGET_MIB} MiB",
            "worker_rss_meets_target": peak is not None and peak < RSS_TARGET_MIB,
            "sweeps": run["sweeps"], "sweep_seconds": options.provision_sweep_seconds,
            "controller_errors": controllers.errors[:10],
            "data_set_workloads_set_aside": run["set_aside"],
        },
    }


def forget_queues(redis_url: str, *names: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    client.delete(*(f"{prefix}{name}" for name in names
                    for prefix in ("", "_kombu.binding.", "_kombu.binding_permanent.")),
                  *(f"{name}\x06\x163" for name in names))

