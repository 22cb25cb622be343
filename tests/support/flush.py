"""The test database emptied faster between the tests that commit (pytest-django's
`transactional_db`: live servers, real workers).

Django empties it with one TRUNCATE of every table: PostgreSQL gives each table and each of its
indexes a new file, most of them for a table that holds nothing, which takes the better part
of a second per test. `delete_instead_of_truncate` has the test process's connection empty every
table with DELETE instead, in the same one transaction, with triggers off for it
(`session_replication_role`: the tables' own triggers and the foreign keys' checks, which find
nothing left to check): the same empty tables, in a fraction of the time. Sequences go on
counting, as after Django's TRUNCATE. A flush that resets the sequences, and any flush by a
role that may not turn triggers off, stays Django's.
"""

from __future__ import annotations

import types


def _sql_flush(ops, style, tables, *, reset_sequences=False, allow_cascade=False):
    if not tables or reset_sequences:
        return type(ops).sql_flush(
            ops, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    deletes = " ".join(f"DELETE FROM {ops.quote_name(table)};" for table in tables)  # noqa: S608
    return [f"SET LOCAL session_replication_role = replica; {deletes}"]


def delete_instead_of_truncate(connection) -> None:
    """Have `connection` (PostgreSQL) flush with DELETE, when its role may turn triggers off."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        row = cursor.fetchone()
    if row and row[0]:
        connection.ops.sql_flush = types.MethodType(_sql_flush, connection.ops)
