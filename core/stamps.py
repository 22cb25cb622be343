"""Data stamps: a version of each watched table, moved on by every committed write to it, so
that a summary computed from some tables can be cached under their versions and read cheaply
until one of them changes.

A statement-level trigger on each watched table (portal migration 0006) adds one to a counter
row of its own backend (connection) in `portal_datastamp`, inside the writing transaction: the
write and its stamp commit together, nothing is bumped by a write rolled back, and concurrent
writers never wait on each other (each backend has its own row). A table's version is the sum
of its rows (every commit makes it grow) with the highest serial drawn for it. Every write
path moves it, whatever it is: a service, a bulk update, the admin, an import, a shell.

`stamped()` caches a computed value under the versions of the tables it is computed from
(`read_stamps()` reads them all in one query, once per request). A transaction that wrote
something itself sees versions nobody else may ever see: it computes without the cache.
"""

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

from django.db import connection, transaction

from core import caching

T = TypeVar("T")

TABLE = "portal_datastamp"
# The tables with the trigger (the migrations that add it keep this list).
WATCHED = frozenset({
    "inventory_site", "inventory_rack", "inventory_node", "inventory_gpu",
    "inventory_healthevent", "inventory_inventoryrun", "inventory_nic", "inventory_nodevalidation",
    "tenants_tenant", "tenants_quota", "tenants_workload",
    "billing_usagerecord", "billing_usagedaily", "billing_meteringwindow",
})
# A table's rows left by backends that are gone are folded into one when there are more.
COMPACT_ABOVE = 64
CACHE_SECONDS = 3600

_MISSING = object()


class Stamps:
    """The versions of the watched tables, as one request read them."""

    def __init__(self, versions: dict[str, tuple[int, int]], *, own_writes: bool):
        self.versions = versions
        # This transaction wrote something: what it sees is not (yet) anyone else's.
        self.own_writes = own_writes

    def key(self, tables: Iterable[str]) -> str:
        return repr([(table, self.versions.get(table, (0, 0))) for table in sorted(tables)])


def read_stamps() -> Stamps:
    """Every watched table's version (one query). Off PostgreSQL (the SQLite demo) there are
    no stamps: every summary is computed when asked, as by a transaction that wrote."""
    if connection.vendor != "postgresql":
        return Stamps({}, own_writes=True)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_current_xact_id_if_assigned() IS NOT NULL, s.tbl, s.n, s.last, s.rows "
            "FROM (SELECT 1) one LEFT JOIN (SELECT tbl, SUM(n) AS n, MAX(last) AS last, "
            "COUNT(*) AS rows FROM portal_datastamp GROUP BY tbl) s ON true"
        )
        rows = cursor.fetchall()
    own_writes = rows[0][0]
    versions = {tbl: (int(n), int(last)) for _, tbl, n, last, _ in rows if tbl is not None}
    if not own_writes and any((count or 0) > COMPACT_ABOVE for *_, count in rows):
        compact()
    return Stamps(versions, own_writes=own_writes)


def compact() -> None:
    """Fold the counter rows of backends that are gone into each table's row 0: the sums, the
    versions, stay as they were."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"WITH gone AS (DELETE FROM {TABLE} s WHERE backend <> 0 "  # noqa: S608
            "AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = s.backend) "
            "RETURNING tbl, n, last) "
            f"INSERT INTO {TABLE} (tbl, backend, n, last) "
            "SELECT tbl, 0, SUM(n), MAX(last) FROM gone GROUP BY tbl "
            "ON CONFLICT (tbl, backend) DO UPDATE SET n = "
            f"{TABLE}.n + excluded.n, last = GREATEST({TABLE}.last, excluded.last)"
        )


def stamped(
    name: str,
    tables: Iterable[str],
    compute: Callable[[], T],
    *,
    stamps: Stamps,
    extra: object = None,
    timeout: int = CACHE_SECONDS,
) -> T:
    """`compute()`, cached under `name` (`<named cache>:<what>`, see core.caching), `extra`
    and the versions of `tables` (the tables it reads: every one of them must be watched, see
    migration portal 0006)."""
    tables = list(tables)
    if unwatched := set(tables) - WATCHED:
        raise ValueError(f"Not watched (no stamp trigger): {', '.join(sorted(unwatched))}")
    if stamps.own_writes:
        return compute()
    family, _, what = name.partition(":")
    digest = hashlib.sha256(f"{extra!r}:{stamps.key(tables)}".encode()).hexdigest()[:32]
    key = caching.key(family, what, digest)
    value = caching.get(family, key, _MISSING)
    if value is _MISSING:
        value = compute()
        caching.set(family, key, value, timeout)
    return value
