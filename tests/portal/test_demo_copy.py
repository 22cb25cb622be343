"""The suite's copy of the demo (support/demo_data.py) puts back exactly the rows the real
`load_demo` wrote."""

import pytest
from django.db import connection

from tests.support.demo_data import _copy_back, _loaded, _state, _tables, demo_loaded

pytestmark = pytest.mark.django_db(transaction=True)


def _contents(tables: list[str]) -> dict[str, str]:
    """Each table's rows, as one digest of their text in primary-key order."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        found = {}
        for table in tables:
            cursor.execute(
                f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "  # noqa: S608
                f"FROM {quote(table)} t"
            )
            found[table] = cursor.fetchone()
    return found


def test_the_copy_put_back_is_the_loaded_demo_row_for_row():
    tables = _tables()
    start = _state(tables)
    demo_loaded()
    loaded = _contents(tables)
    assert loaded["tenants_tenant"][0] == 4 and loaded["tenants_workload"][0] > 10
    assert start in _loaded  # what the next test from this state gets
    _copy_back(_loaded[start])
    assert _contents(tables) == loaded
