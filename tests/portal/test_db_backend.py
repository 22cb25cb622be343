"""core.db.postgresql: Django's PostgreSQL backend, timestamps read by psycopg's compiled
loader, with the same answers (and errors) as Django's own loader."""

import datetime

import psycopg
import pytest
from django.db import DataError, connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader
from django.utils import timezone
from psycopg.pq import Format

from core.audit import audit
from core.db.postgresql.base import _fast_loader
from core.models import AuditEvent

pytestmark = pytest.mark.django_db
TIMESTAMPTZ = psycopg.adapters.types["timestamptz"].oid


def _django(tz):
    return type("SpecificTzLoader", (BaseTzLoader,), {"timezone": tz})


def _select(sql: str):
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()[0]


def test_the_portal_uses_the_backend_with_the_compiled_loader():
    assert connection.settings_dict["ENGINE"] == "core.db.postgresql"
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(TIMESTAMPTZ, Format.TEXT)
    assert loader is _fast_loader(connection.timezone)
    assert loader.__name__ == "CompiledTzLoader"  # psycopg-binary is a dependency


def test_a_saved_timestamp_reads_back_the_same_instant_in_utc(platform_admin):
    moment = datetime.datetime(2026, 3, 29, 1, 30, 45, 123456, tzinfo=datetime.UTC)
    event = audit(actor=platform_admin, action="test.moment", obj=platform_admin)
    AuditEvent.objects.filter(pk=event.pk).update(created_at=moment)

    read = AuditEvent.objects.values_list("created_at", flat=True).get(pk=event.pk)
    assert read == moment
    assert read.tzinfo is datetime.UTC
    assert read.isoformat() == "2026-03-29T01:30:45.123456+00:00"


@pytest.mark.parametrize("text", [
    "2026-03-29 01:30:00+02",  # another offset: the same instant, in UTC
    "2026-12-03 15:41:21.130335+00",
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999999+00",
    "2024-02-29 12:00:00-09:30",
])
def test_each_value_is_what_djangos_loader_reads(text):
    read = _select(f"SELECT '{text}'::timestamptz")
    with connection.cursor() as cursor:
        cursor.cursor.adapters.register_loader("timestamptz", _django(connection.timezone))
        cursor.execute(f"SELECT '{text}'::timestamptz")
        django = cursor.fetchone()[0]
    assert read == django
    assert read.utcoffset() == datetime.timedelta(0)
    assert read.tzinfo is datetime.UTC


@pytest.mark.parametrize("text", ["infinity", "-infinity", "10000-01-01 00:00:00+00",
                                  "0001-01-01 00:00:00 BC"])
def test_a_value_python_cannot_hold_is_djangos_error(text):
    with pytest.raises(DataError):
        _select(f"SELECT '{text}'::timestamptz")


def _read_with_datestyle(style: str, loader=None):
    with connection.cursor() as cursor:
        if loader is not None:
            cursor.cursor.adapters.register_loader("timestamptz", loader)
        cursor.execute(f"SET datestyle = '{style}'")
        try:
            cursor.execute("SELECT '2026-03-04 05:06:07.5+00'::timestamptz")
            return cursor.fetchone()[0]
        finally:
            cursor.execute("SET datestyle = 'ISO, MDY'")


def test_an_iso_datestyle_in_any_order_is_read():
    read = _read_with_datestyle("ISO, DMY")
    assert read == datetime.datetime(2026, 3, 4, 5, 6, 7, 500000, tzinfo=datetime.UTC)


def test_a_datestyle_django_cannot_read_is_refused_as_django_refuses_it():
    with pytest.raises(NotImplementedError) as django:
        _read_with_datestyle("SQL, DMY", loader=_django(connection.timezone))
    with pytest.raises(NotImplementedError) as ours:
        _read_with_datestyle("SQL, DMY")
    assert "DateStyle" in str(django.value) and "DateStyle" in str(ours.value)


def test_without_a_timezone_the_value_is_naive_as_djangos():
    connection.ensure_connection()
    loader = _fast_loader(None)(TIMESTAMPTZ, connection.connection)
    data = b"2026-03-04 05:06:07+00"
    assert loader.load(data) == _django(None)(TIMESTAMPTZ, connection.connection).load(data)
    assert timezone.is_naive(loader.load(data))
