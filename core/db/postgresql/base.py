"""Django's PostgreSQL backend, reading `timestamptz` values with psycopg's compiled loader.

Django registers a loader of its own for `timestamptz` on every connection (to give each value
the connection's timezone), and subclasses psycopg's pure-Python loader to write it: every
timestamp of every row is parsed in Python, about 4 µs each. A 50-row workload list holds
about 190 of them. The loader here answers the same values (the same instant, the timezone
Django gives them: `datetime.UTC` with USE_TZ, naive without), from psycopg's compiled loader
(psycopg-binary) where it is installed: under 1 µs each. A value it refuses is handed to
Django's loader, which raises Django's error as before; a DateStyle other than ISO is refused
by both alike (NotImplementedError).

Built on django-prometheus's PostgreSQL backend, which counts connections, queries, their
errors and durations for /metrics. Set as the ENGINE by the settings wherever DATABASE_URL
names PostgreSQL.
"""

from __future__ import annotations

import functools

from django.db.backends.postgresql import base
from django.db.backends.postgresql.psycopg_any import BaseTzLoader, is_psycopg3
from django_prometheus.db.backends.postgresql import base as prometheus_base

if is_psycopg3:
    import psycopg
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    _PSYCOPG_LOADER = psycopg.adapters.get_loader(base.TIMESTAMPTZ_OID, Format.TEXT)
    _COMPILED = _PSYCOPG_LOADER is not None and not _PSYCOPG_LOADER.__module__.startswith(
        "psycopg."
    )

    @functools.cache
    def _fast_loader(tz) -> type | None:
        """A `timestamptz` loader giving each value the timezone `tz` (None: naive), as
        Django's does, on psycopg's compiled loader; None without psycopg-binary."""
        if not _COMPILED:
            return None
        django_loader = type("SpecificTzLoader", (BaseTzLoader,), {"timezone": tz})

        class CompiledTzLoader(Loader):
            # psycopg's compiled loaders cannot be subclassed: this one holds one.
            timezone = tz  # what Django's cursor compares with its own (create_cursor)

            def __init__(self, oid, context=None):
                super().__init__(oid, context)
                self._compiled = _PSYCOPG_LOADER(oid, context)

            def load(self, data):
                try:
                    value = self._compiled.load(data)
                except psycopg.Error:
                    # A value out of Python's range: Django's own loader, with its own error.
                    return django_loader(self.oid, self.connection).load(data)
                if tz is None:
                    return value.replace(tzinfo=None)
                return value.astimezone(tz)

        return CompiledTzLoader


class DatabaseWrapper(prometheus_base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        if is_psycopg3:
            loader = _fast_loader(self.timezone)
            if loader is not None:
                connection.adapters.register_loader("timestamptz", loader)
        return connection
