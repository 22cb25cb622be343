"""Provisioning throughput on two clusters, one of them slow (issue 34): a slow cluster fills
its own queue and leaves the other's throughput as it was.

Two Kubernetes API emulators (the tests' kmock one), each a cluster of the bench database whose
credentials are a kubeconfig file naming it; the slow one holds every request for
`BENCH_PROVISION_SLOW_SECONDS` before serving it. One real Celery worker per cluster queue
(`CELERY_WORKER_CLUSTERS=<slug>`, `-Q cluster.<slug>`; the fast cluster's worker also takes the
run's default queue), gunicorn, `Controllers` on each emulator and the harness playing beat (each
cluster's observe sweep on its queue every `BENCH_PROVISION_SWEEP_SECONDS`), as in
`bench/provisioning.py`. vClusters are launched over the API with an explicit `"cluster"` (they
ask no GPU: placement needs no GPU nodes there), on the tenant's fleet-wide quota.

Measured, after two workloads on the fast cluster to warm up (not counted):
`BENCH_PROVISION_CLUSTER_WORKLOADS` workloads launched on the fast cluster alone, to
all ready (workloads per second), then as many on the slow cluster and, once they are launched,
as many again on the fast one: the fast cluster's workloads per second while the slow one is
busy, against alone (the target: at least 0.8 of it). It runs after `bench.provisioning`.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any

from django.db import connections

from . import dataset
from .controllers import Controllers
from .options import Options
from .provisioning import (
    _launch_all,
    _set_aside_data_set_workloads,
    _wait_until_done,
    forget_queues,
    start_worker,
    stop_workers,
    wait_for_workers,
)
from .server import free_port, server_environment, start_server, stop_process

NAME = "provisioning throughput, two clusters"
TARGET_RATIO = 0.8  # the fast cluster's throughput beside the busy slow one ÷ alone, at least
WARM_UP = 2  # workloads launched on the fast cluster before anything is timed
KIND = "vcluster"
SPEC = {"kubernetes_version": "1.35", "cpu": 2, "memory_gib": 4}


class ClusterBeat(threading.Thread):
    """Beat's observe sweep, each cluster's on its own queue, every `every` seconds."""

    def __init__(self, app, clusters: list[str], every: float) -> None:
        super().__init__(name="bench-cluster-beat", daemon=True)
        self.app, self.clusters, self.every = app, clusters, every
        self._halt = threading.Event()

    def run(self) -> None:
        from core.queueing import cluster_queue

        while not self._halt.wait(self.every):
            for cluster in self.clusters:
                self.app.send_task("tenants.workloads.tasks.workloads_observe_sweep_task",
                                   kwargs={"cluster": cluster}, queue=cluster_queue(cluster))

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(timeout=10)


def slow_down(emulator: Any, seconds: float) -> None:
    """Hold every request for `seconds` before serving it (not `emulator.delay(...)`: a kmock
    reaction that answers nothing is spent after one request)."""

    def hold() -> None:
        emulator.handler.latency = seconds

    emulator._in_loop(hold)


def timed_request_seconds(emulator: Any, times: int = 3) -> float:
    """The quickest of `times` namespace lists at `emulator` (the first one pays for the
    client's start): that the slow one holds every request, checked."""
    from kubernetes import client

    api_client = emulator.api_client()
    try:
        api, took = client.CoreV1Api(api_client), []
        for _ in range(times):
            started = time.perf_counter()
            api.list_namespace()
            took.append(time.perf_counter() - started)
        return min(took)
    finally:
        api_client.close()


def _quota(tenant) -> None:
    """Fleet-wide room for every launch of the run (per-cluster grants left as they are)."""
    from tenants.quota.models import Quota
    from tenants.workloads.services.lifecycle import workload_validate

    _, demand = workload_validate(tenant=tenant, kind=KIND, spec=SPEC)
    for resource in demand:
        Quota.objects.update_or_create(tenant=tenant, resource=resource, cluster=None,
                                       defaults={"limit": 1_000_000})


def _launches(tenant, cluster: str, prefix: str, count: int) -> list[dict[str, Any]]:
    return [{"tenant": tenant.slug, "kind": KIND, "name": f"{prefix}-{i:04d}", "spec": SPEC,
             "cluster": cluster} for i in range(count)]


def _phase(port: int, token: str, launches: list[dict[str, Any]], options: Options,
           started: float) -> dict[str, Any]:
    """Launch, wait until all are ready; workloads per second since `started`."""
    from tenants.workloads.models import Workload

    statuses = _launch_all(port, token, launches, options.concurrency)
    ids = list(Workload.objects.filter(name__in=[launch["name"] for launch in launches])
               .values_list("pk", flat=True))
    by_status = _wait_until_done(ids, time.monotonic() + options.provision_timeout)
    seconds = time.perf_counter() - started
    ready = by_status.get("ready", 0)
    return {"workloads": len(launches), "ready": ready, "seconds": round(seconds, 2),
            "workloads_per_second": round(ready / seconds, 2) if seconds else None,
            "launch_answers": {str(status): n for status, n in sorted(statuses.items())},
            "ids": ids}


def _ready_count(ids: list[int]) -> int:
    from tenants.workloads.models import Workload

    count = Workload.objects.filter(pk__in=ids, status="ready").count()
    connections.close_all()
    return count


def measure_two_clusters(options: Options) -> dict[str, Any]:
    import logging

    from django.contrib.auth import get_user_model

    from core.queueing import cluster_queue
    from core.tokens import api_token_create
    from portal.celery import app
    from tenants.access.models import Tenant
    from tests.support.clusters import emulated_cluster
    from tests.support.kube_emulator import KubeEmulator

    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    count = options.provision_cluster_workloads
    run = uuid.uuid4().hex[:8]
    fast, slow = f"bench-fast-{run}", f"bench-slow-{run}"
    queue, sink = f"bench-{run}", f"bench-{run}-follow-ups"
    tenant = Tenant.objects.get(slug=dataset.BENCH_TENANT)
    owner = get_user_model().objects.get(username=dataset.BENCH_OWNER)
    _set_aside_data_set_workloads()
    _quota(tenant)
    token = api_token_create(user=owner, name=f"bench two clusters {run}").raw
    emulators = {fast: KubeEmulator().start(), slow: KubeEmulator().start()}
    for slug, emulator in emulators.items():
        emulated_cluster(emulator, slug, options.out, name=f"Bench {slug}")
    connections.close_all()
    slow_down(emulators[slow], options.provision_slow_seconds)
    probe = {role: round(timed_request_seconds(emulators[slug]), 3)
             for role, slug in (("fast", fast), ("slow", slow))}

    celery_env = {"CELERY_BROKER_URL": options.redis_url, "CELERY_TASK_ALWAYS_EAGER": "false"}
    app.conf.update(task_always_eager=False, broker_url=options.redis_url,
                    result_backend=None, task_default_queue=queue)
    app._after_fork()
    base_env = server_environment(options) | celery_env | {
        "CELERY_TASK_DEFAULT_QUEUE": sink, "FLEET_BACKEND": "kubernetes"}
    base_env.pop("PROMETHEUS_URL", None)
    plan = {fast: [queue, cluster_queue(fast)], slow: [cluster_queue(slow)]}
    hostnames = {slug: f"bench-{run}-{slug}@{socket.gethostname()}" for slug in plan}
    logs = [(options.out / f"two-clusters-worker-{n}.log").open("wb") for n in range(2)]
    workers = [start_worker(base_env | {"CELERY_WORKER_CLUSTERS": slug},
                             hostnames[slug], queues, log)
               for (slug, queues), log in zip(plan.items(), logs, strict=True)]
    controllers = [Controllers(emulator).start() for emulator in emulators.values()]
    beat = ClusterBeat(app, [fast, slow], options.provision_sweep_seconds)
    server, port = None, free_port()
    result: dict[str, Any] = {"name": NAME}
    try:
        server = start_server(options, port,
                              options.out / "two-clusters-gunicorn.log",
                              extra_env=celery_env | {"CELERY_TASK_DEFAULT_QUEUE": queue})
        if not wait_for_workers(app, list(hostnames.values()), workers):
            return result | {"skipped": "the Celery workers did not start (see "
                                        "two-clusters-worker-*.log)"}
        beat.start()
        # Warmed up first (the worker's first tasks, discovery, gunicorn), not counted.
        warm_up = _phase(port, token, _launches(tenant, fast, f"fw-{run[:4]}", WARM_UP),
                         options, time.perf_counter())
        alone = _phase(port, token, _launches(tenant, fast, f"fa-{run[:4]}", count),
                       options, time.perf_counter())
        slow_statuses = _launch_all(port, token,
                                    _launches(tenant, slow, f"sl-{run[:4]}", count),
                                    options.concurrency)
        from tenants.workloads.models import Workload

        slow_ids = list(Workload.objects.filter(cluster_id=slow).values_list("pk", flat=True))
        busy = _phase(port, token, _launches(tenant, fast, f"fb-{run[:4]}", count),
                      options, time.perf_counter())
        slow_ready_then = _ready_count(slow_ids)
        slow_requests = len(emulators[slow].requests())
    finally:
        beat.stop()
        for controller in controllers:
            controller.stop()
        stop_workers(workers, logs)
        if server is not None:
            stop_process(server)
        for emulator in emulators.values():
            emulator.stop()
        forget_queues(options.redis_url, queue, sink, cluster_queue(fast), cluster_queue(slow))
        _retire(fast, slow)
    return result | _figures(alone, busy, {
        "slow_workloads": len(slow_ids), "slow_launch_answers":
            {str(status): n for status, n in sorted(slow_statuses.items())},
        "slow_ready_when_fast_done": slow_ready_then,
        "slow_kube_requests_when_fast_done": slow_requests,
        "request_seconds": probe, "fast": fast, "slow": slow, "warm_up": warm_up["ready"],
        "errors": [error for controller in controllers for error in controller.errors][:10],
    }, options)


def _retire(*slugs: str) -> None:
    """The run's clusters leave service: later sweeps and pages of the clone skip them."""
    from inventory.models import Cluster

    Cluster.objects.filter(slug__in=slugs).update(state=Cluster.State.RETIRED)
    connections.close_all()


def _figures(alone: dict[str, Any], busy: dict[str, Any], slow: dict[str, Any],
             options: Options) -> dict[str, Any]:
    alone_rate, busy_rate = alone["workloads_per_second"], busy["workloads_per_second"]
    ratio = round(busy_rate / alone_rate, 2) if alone_rate and busy_rate else None
    count = options.provision_cluster_workloads
    return {
        "unit": "workloads/s",
        "portal": f"{count} vClusters on the fast cluster while {count} go to one answering in "
                  f"{options.provision_slow_seconds:g} s a request, a worker per cluster",
        "floor": "the fast cluster alone",
        "portal_value": busy_rate, "floor_value": alone_rate, "ratio": ratio,
        "target": f"≥ {TARGET_RATIO} of alone",
        "meets_target": bool(ratio is not None and ratio >= TARGET_RATIO
                             and alone["ready"] == busy["ready"] == count
                             and not slow["errors"]),
        "details": {
            "alone": {key: value for key, value in alone.items() if key != "ids"},
            "busy": {key: value for key, value in busy.items() if key != "ids"},
            "slow_seconds_per_request": options.provision_slow_seconds,
            "sweep_seconds": options.provision_sweep_seconds,
            "clusters": {"fast": slow["fast"], "slow": slow["slow"]},
            "one_request_seconds": slow["request_seconds"],
            "warm_up_ready": slow["warm_up"],
            "slow_workloads": slow["slow_workloads"],
            "slow_launch_answers": slow["slow_launch_answers"],
            "slow_ready_when_fast_done": slow["slow_ready_when_fast_done"],
            "slow_kube_requests_when_fast_done": slow["slow_kube_requests_when_fast_done"],
            "controller_errors": slow["errors"],
        },
    }
