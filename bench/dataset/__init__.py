"""The fleet-scale data set of the benchmark, written straight into PostgreSQL with COPY.

Deterministic: the same scale, seed and anchor month give the same rows (ids included). At
scale 1 it holds what issue 13 measures a fleet at: 2,000 nodes with 16,000 GPUs in 4 sites,
2,000 tenants with 5,000 users, 20,000 workloads with their event history, 10,000 quota
requests (400 awaiting review), 12 months of invoices and one month of hourly usage for 10,000
workloads (about 7 million rows). Every count scales linearly, with a minimum of 1.

Rows go in with COPY, not through the services: no audit events, no cluster follow-ups, and
issued invoices written already issued (the models refuse to change one afterwards). This is
test data for measuring reads; it never runs against a served portal's database (the command
refuses a non-empty database).
"""

from .generator import database_is_empty, generate
from .plan import (
    BENCH_ADMIN,
    BENCH_FINANCE,
    BENCH_OWNER,
    BENCH_TENANT,
    FULL_SCALE,
    Sizes,
    default_anchor,
)

__all__ = [
    "BENCH_ADMIN",
    "BENCH_FINANCE",
    "BENCH_OWNER",
    "BENCH_TENANT",
    "FULL_SCALE",
    "Sizes",
    "database_is_empty",
    "default_anchor",
    "generate",
]
