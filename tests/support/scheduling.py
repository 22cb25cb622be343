"""The order the suite runs in: the slowest modules first, so that the parallel processes
(pytest-xdist, `--dist worksteal`) end on quick tests and finish together.

A process that runs out of tests takes half of the other's queue, from its end; what no
process can share is the test each one is running. A browser crawl or a real worker's test
(minutes or tens of seconds) left at the end of a queue keeps the run going while the other
process idles. Whole modules move, in their own order, so that module-scoped fixtures are
still set up once; the rest keeps its collection order.
"""

from __future__ import annotations

import pytest

# Fixtures of tests that take seconds to minutes: a browser, a live server and the services
# behind it, real Celery worker and beat processes.
SLOW_FIXTURES = frozenset({"browser", "page", "live_server", "celery_worker", "celery_beat"})
# Modules slow for what their tests run themselves: the demo's load (tens of seconds each),
# servers and tools started as processes, migrations moved back and forth, the schema's fuzz.
SLOW_MODULES = (
    "tests/browser/",
    "tests/portal/test_demo.py",
    "tests/portal/test_demo_sqlite.py",
    "tests/portal/test_plain_words.py",
    "tests/billing/test_metering_caps.py",
    "tests/tenants/test_simulated_kueue.py",
    "tests/tenants/workloads/test_demo_workloads.py",
    "tests/tenants/workloads/test_fleet_capacity_honoured.py",
    "tests/deploy/test_prod_local.py",
    "tests/deploy/test_image.py",
    "tests/benchmarks/",
    "tests/portal/test_api_schema_fuzz.py",
    "tests/billing/test_payments_migration.py",
    "tests/tenants/test_quota_clusters_migration.py",
    "tests/test_architecture.py",
    "tests/test_docs.py",
)


def _rank(module: str, items: list[pytest.Item]) -> int:
    if module.startswith(SLOW_MODULES[0]):
        return 0  # the browser journeys and crawls: the longest tests of all
    if module.startswith(SLOW_MODULES):
        return 1
    if any(SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())) for item in items):
        return 1
    return 2


def slowest_modules_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: modules by rank (stable: collection order within a rank)."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ordered = sorted(modules.items(), key=lambda module: _rank(*module))
    items[:] = [item for _, module_items in ordered for item in module_items]
