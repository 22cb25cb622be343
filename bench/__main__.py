"""`python -m bench` (what `make bench` runs): see bench.harness, and
docs/benchmark.md for every setting (BENCH_SCALE, BENCH_REQUESTS, BENCH_SECONDS_PER_MODE,
BENCH_CONCURRENCY, BENCH_WORKERS, BENCH_OUT, BENCH_DATABASE_URL, BENCH_REDIS_URL,
BENCH_VARIED_METER_SECONDS, BENCH_METER_HOURS, BENCH_CELERY_HOURS, BENCH_PROVISION_*).
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
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    import django

    django.setup()
    from bench import harness

    harness.run(harness.options_from_environment())
    return 0


if __name__ == "__main__":
    sys.exit(main())
