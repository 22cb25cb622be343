"""`python -m portal.bench` (what `make bench` runs): see portal.bench.harness.

Environment: BENCH_SCALE (default 1), BENCH_SEED (42), BENCH_REQUESTS (per page and mode; 200
at scale 0.5 and above, else 40), BENCH_CONCURRENCY (4), BENCH_WORKERS (gunicorn workers, 4),
BENCH_OUT (artifacts/bench), BENCH_DATABASE_URL (the bench's own database, replaced on every
run; its name must contain "bench"; default postgres://postgres@127.0.0.1:5432/portal_bench),
BENCH_METER_HOURS (hours of usage ingested against COPY, 6), BENCH_CELERY_HOURS (metering
windows the Celery worker runs, 6), BENCH_REDIS_URL (its broker, redis://127.0.0.1:6379/0),
BENCH_PROVISION_WORKLOADS (launched through the API and driven to ready against the Kubernetes
emulator, 1000), BENCH_PROVISION_WORKERS (Celery workers doing it, 2), BENCH_PROVISION_KINDS
(launched in turn, inference,vcluster,vm,slurm), BENCH_PROVISION_SWEEP_SECONDS (the observe
sweep's period, production's WORKLOAD_OBSERVE_SECONDS), BENCH_PROVISION_TIMEOUT (900 s).
"""

import os
import secrets
import sys


def main() -> int:
    os.environ["DATABASE_URL"] = os.environ.get("BENCH_DATABASE_URL") or (
        "postgres://postgres@127.0.0.1:5432/portal_bench"
    )
    # One key for this process (which makes the sessions) and the server (which reads them).
    os.environ["SECRET_KEY"] = secrets.token_urlsafe(50)
    os.environ.pop("PORTAL_ENV", None)
    # The floor page is routed here too: its queries are counted in-process like any page's.
    os.environ["BENCH_FLOOR_ENABLED"] = "true"
    os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"
    import django

    django.setup()
    from portal.bench import harness

    harness.run(harness.options_from_environment())
    return 0


if __name__ == "__main__":
    sys.exit(main())
