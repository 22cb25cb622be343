"""Data stamps (core.stamps): every committed write to a watched table moves its version,
whatever wrote it; nothing else does; a transaction with writes of its own is never cached."""

import pytest
from django.db import connection, transaction

from core.stamps import COMPACT_ABOVE, TABLE, WATCHED, read_stamps, stamped
from inventory.models import Node
from tests.factories import NodeFactory, TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_watched_table_has_the_trigger():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE t.tgname = 'portal_datastamp'"
        )
        triggered = {row[0] for row in cursor.fetchall()}
    assert triggered == set(WATCHED)


def test_a_table_not_watched_cannot_be_stamped():
    with pytest.raises(ValueError, match="tenants_membership"):
        stamped("node-list:t", ["tenants_membership"], lambda: 1, stamps=read_stamps())


def test_a_committed_write_moves_its_tables_version_and_no_other():
    before = read_stamps()
    node = NodeFactory()
    after_insert = read_stamps()
    assert after_insert.key(["inventory_node"]) != before.key(["inventory_node"])
    assert after_insert.key(["tenants_workload"]) == before.key(["tenants_workload"])
    # A bulk update, a raw statement and a delete: every way a row can change.
    Node.objects.filter(pk=node.pk).update(cpu_cores=8)
    after_update = read_stamps()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE inventory_node SET memory_gib = 1 WHERE id = %s", [node.pk])
    after_raw = read_stamps()
    node.delete()
    after_delete = read_stamps()
    keys = [s.key(["inventory_node"]) for s in (after_insert, after_update, after_raw,
                                                after_delete)]
    assert len(set(keys)) == 4


def test_a_write_rolled_back_moves_nothing():
    TenantFactory()
    before = read_stamps().key(["tenants_tenant"])
    with pytest.raises(RuntimeError), transaction.atomic():
        TenantFactory()
        raise RuntimeError
    assert read_stamps().key(["tenants_tenant"]) == before


def test_a_value_is_computed_once_per_version():
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    assert stamped("node-list:t", ["inventory_node"], compute, stamps=read_stamps()) == 1
    assert stamped("node-list:t", ["inventory_node"], compute, stamps=read_stamps()) == 1
    assert stamped("node-list:t", ["inventory_node"], compute, stamps=read_stamps(), extra="x") == 2
    NodeFactory()
    assert stamped("node-list:t", ["inventory_node"], compute, stamps=read_stamps()) == 3
    assert stamped("node-list:t", ["inventory_node"], compute, stamps=read_stamps()) == 3


def test_a_transaction_that_wrote_computes_without_the_cache():
    calls = []
    with transaction.atomic():
        assert not read_stamps().own_writes
        NodeFactory()
        stamps = read_stamps()
        assert stamps.own_writes
        for _ in range(2):
            stamped("node-list:t", ["inventory_node"], lambda: calls.append(1), stamps=stamps)
    assert len(calls) == 2


def test_the_rows_of_backends_gone_are_folded_without_moving_a_version():
    NodeFactory()
    with connection.cursor() as cursor:
        # Backends that no longer exist (PIDs above Linux's largest).
        cursor.executemany(
            f"INSERT INTO {TABLE} (tbl, backend, n, last) VALUES ('inventory_node', %s, 2, 5)",  # noqa: S608
            [[5_000_000 + i] for i in range(COMPACT_ABOVE + 1)],
        )
    before = read_stamps()  # folds them
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE tbl = 'inventory_node'")  # noqa: S608
        rows = cursor.fetchone()[0]
    assert rows <= 2  # this backend's and the folded one
    assert read_stamps().key(["inventory_node"]) == before.key(["inventory_node"])
