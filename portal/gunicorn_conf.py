"""gunicorn's settings for the web process:
`gunicorn -c python:portal.gunicorn_conf portal.wsgi --bind 0.0.0.0:8000 --workers 4`.

The master loads Django once (`preload_app`) and each worker freezes what it inherited: the
start-up heap (about 190k objects: modules, URL patterns, templates, models) moves to the
garbage collector's permanent generation, so a full collection walks only what requests
made. Without it about one request in five paid ~100 ms for a full collection at fleet scale.
What the first requests build to keep (every template compiled by the cached loader, URL
resolvers' caches, serializers' fields, the admin's cached parts) is frozen too: each worker
collects and freezes again after its 1st, 2nd, 4th … 512th request, so a full collection later
walks only what requests leave behind (about 20 → 4 ms each at fleet scale).
Command-line options (bind, workers, timeout) still apply on top of these.

With PROMETHEUS_MULTIPROC_DIR set, every worker writes its metrics to files in that directory
and /metrics sums them all (core.metrics.scrape_registry), so a scrape is true whichever worker
answers it. The master empties the directory when it reads this file, before it loads the
application (a restarted container keeps its /tmp), and marks each dead worker's gauges gone.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

preload_app = True


def _prepare_multiprocess_dir() -> None:
    """An empty metrics directory before any metric exists: counts left by an earlier run's
    workers would be summed into this run's."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not path:
        return
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    for leftover in directory.glob("*.db"):
        leftover.unlink(missing_ok=True)


_prepare_multiprocess_dir()


def when_ready(server: Any) -> None:
    # Collected once in the master, so the heap the workers freeze holds no start-up garbage.
    gc.collect()


def pre_fork(server: Any, worker: Any) -> None:
    # A connection the master opened while loading would be one socket shared by every worker.
    from django.db import connections

    connections.close_all()


def post_fork(server: Any, worker: Any) -> None:
    gc.freeze()


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        # Its counters stay summed; its gauges of the live modes are dropped.
        multiprocess.mark_process_dead(worker.pid)


# After which of its requests a worker collects and freezes what it keeps (a bounded number of
# times: anything frozen is never looked at by the cyclic collector again).
FREEZE_AFTER = frozenset(2**i for i in range(10))


def post_request(worker: Any, req: Any, environ: Any, resp: Any) -> None:
    worker.portal_requests = getattr(worker, "portal_requests", 0) + 1
    if worker.portal_requests in FREEZE_AFTER:
        gc.collect()  # nothing cyclic and dead is frozen for good
        gc.freeze()
