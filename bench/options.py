"""How a bench run is set: from the environment (see bench.__main__)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import environ
from django.conf import settings

from . import dataset

BASE_DIR = Path(settings.BASE_DIR)
USERS = {"owner": dataset.BENCH_OWNER, "admin": dataset.BENCH_ADMIN,
         "finance": dataset.BENCH_FINANCE}
SERVER_START_TIMEOUT = 60
# gunicorn's worker timeout and the client's, per request: generous, so that a slow page is
# measured rather than killed.
REQUEST_TIMEOUT = 300


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
    meter_hours: int  # hours of usage metered by usage_meter_span against COPY
    celery_hours: int  # metering windows the Celery worker runs
    redis_url: str  # the Celery worker's broker and result backend
    # The server's cache: production's posture, one Redis every worker shares
    cache_url: str = "rediscache://127.0.0.1:6379/1"
    # Provisioning through Celery against the Kubernetes emulator (bench/provisioning.py)
    provision_workloads: int = 1000  # launched through the API
    provision_workers: int = 2  # Celery worker processes (solo pool each)
    provision_kinds: tuple[str, ...] = ("inference", "vcluster", "vm", "slurm")  # in turn
    provision_sweep_seconds: float = 15.0  # beat's observe sweep, played by the harness
    provision_timeout: float = 900.0  # seconds for every workload to be ready
    # Two clusters, one slow (bench/provisioning_clusters.py): workloads per phase and cluster,
    # and the seconds the slow one holds every request
    provision_cluster_workloads: int = 40
    provision_slow_seconds: float = 0.5
    # The varied mode (bench/varied.py): the observe sweep and a metering window sent
    # this often (0: not at all)
    varied_sweep_seconds: float = 15.0
    varied_meter_seconds: float = 60.0

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
        meter_hours=int(os.environ.get("BENCH_METER_HOURS") or 6),
        celery_hours=int(os.environ.get("BENCH_CELERY_HOURS") or 6),
        redis_url=os.environ.get("BENCH_REDIS_URL") or "redis://127.0.0.1:6379/0",
        cache_url=os.environ.get("BENCH_CACHE_URL") or "rediscache://127.0.0.1:6379/1",
        provision_workloads=int(os.environ.get("BENCH_PROVISION_WORKLOADS") or 1000),
        provision_workers=int(os.environ.get("BENCH_PROVISION_WORKERS") or 2),
        provision_kinds=tuple(
            kind.strip() for kind in (os.environ.get("BENCH_PROVISION_KINDS")
                                      or "inference,vcluster,vm,slurm").split(",")
            if kind.strip()
        ),
        # Production's beat interval (WORKLOAD_OBSERVE_SECONDS) unless set for the run.
        provision_sweep_seconds=float(
            os.environ.get("BENCH_PROVISION_SWEEP_SECONDS")
            or settings.CELERY_BEAT_SCHEDULE["workloads-observe-sweep"]["schedule"]
        ),
        provision_timeout=float(os.environ.get("BENCH_PROVISION_TIMEOUT") or 900),
        provision_cluster_workloads=int(
            os.environ.get("BENCH_PROVISION_CLUSTER_WORKLOADS") or 40),
        provision_slow_seconds=float(os.environ.get("BENCH_PROVISION_SLOW_SECONDS") or 0.5),
        varied_sweep_seconds=float(
            os.environ.get("BENCH_VARIED_SWEEP_SECONDS")
            or settings.CELERY_BEAT_SCHEDULE["workloads-observe-sweep"]["schedule"]
        ),
        varied_meter_seconds=float(os.environ.get("BENCH_VARIED_METER_SECONDS") or 60),
    )


