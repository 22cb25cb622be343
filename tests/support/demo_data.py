"""The demo's data for the tests that only look at it (pages crawled, words and filters
checked), at the cost of loading it once per test process.

`load_demo` drives the whole story through the services and the simulated fleet, some fifteen
seconds of a test process's time; the suite's page crawls need its rows, not the story.
`demo_loaded()` runs the real command the first time a test process asks from a given starting
state, keeps what that wrote (each table, as PostgreSQL's binary COPY), and afterwards empties
the tables and copies the rows back, in a fraction of a second. It starts again from the real
command whenever the starting state differs (rows a test made first, a test in a transaction
whose after-commit work does not run), so what a test gets is what the command would have made
there, only loaded earlier: the tests that depend on the moment of loading (coming up, queued,
backdated) or change a setting the load reads call the command themselves, as do the demo's
own tests.
"""

from __future__ import annotations

from io import StringIO

from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection, transaction

# Per test process: (starting state) -> the tables' rows after a real load from it.
_loaded: dict[tuple, dict[str, bytes]] = {}


def _tables() -> list[str]:
    return sorted(connection.introspection.django_table_names(only_existing=True,
                                                              include_views=False))


def _state(tables: list[str]) -> tuple:
    """What the load starts from: each table's row count, and whether the test's transaction
    holds the load (its after-commit work then never runs)."""
    quote = connection.ops.quote_name
    counts = " UNION ALL ".join(
        f"SELECT {i}, count(*) FROM {quote(table)}"  # noqa: S608 - Django's own table names
        for i, table in enumerate(tables)
    )
    with connection.cursor() as cursor:
        cursor.execute(counts)
        rows = dict(cursor.fetchall())
    return connection.in_atomic_block, tuple((table, rows[i]) for i, table in enumerate(tables))


def _copyable() -> bool:
    """Copying back turns the foreign keys' triggers off for the transaction, as the suite's
    flush does: only for a superuser on PostgreSQL."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        row = cursor.fetchone()
    return bool(row and row[0])


def demo_loaded() -> None:
    """The demo loaded into the test database, as `manage.py load_demo` would from here."""
    if not _copyable():
        call_command("load_demo", stdout=StringIO())
        return
    tables = _tables()
    state = _state(tables)
    if state in _loaded:
        _copy_back(_loaded[state])
        return
    call_command("load_demo", stdout=StringIO())
    _loaded[state] = _copy_out(tables)


def _copy_out(tables: list[str]) -> dict[str, bytes]:
    quote = connection.ops.quote_name
    rows: dict[str, bytes] = {}
    with connection.cursor() as cursor:
        raw = cursor.cursor
        for table in tables:
            with raw.copy(f"COPY {quote(table)} TO STDOUT (FORMAT BINARY)") as copy:
                rows[table] = b"".join(bytes(block) for block in copy)
    return rows


def _copy_back(rows: dict[str, bytes]) -> None:
    quote = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        raw = cursor.cursor
        for table, data in rows.items():
            cursor.execute(f"DELETE FROM {quote(table)}")  # noqa: S608
            with raw.copy(f"COPY {quote(table)} FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(data)
    # The content types are the first load's rows now, not those the flush made.
    ContentType.objects.clear_cache()
