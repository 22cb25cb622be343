"""Data stamps (core.stamps): a counter per watched table and backend, moved on in the same
transaction by a statement-level trigger on every write to the table. Summaries computed from
these tables are cached under their versions (the fleet overview, the node list's choices,
the node detail page)."""

from django.db import migrations

# Every table a stamped summary reads. A summary that reads another table needs it added here
# (a new migration: CREATE TRIGGER on it).
WATCHED = (
    "inventory_site", "inventory_rack", "inventory_node", "inventory_gpu",
    "inventory_healthevent", "inventory_inventoryrun", "inventory_nic", "inventory_nodevalidation",
    "tenants_tenant", "tenants_quota", "tenants_workload",
    "billing_usagerecord", "billing_usagedaily", "billing_meteringwindow",
)

CREATE = """
CREATE TABLE portal_datastamp (
    tbl text NOT NULL,
    backend integer NOT NULL,
    n bigint NOT NULL,
    last bigint NOT NULL,
    PRIMARY KEY (tbl, backend)
);
CREATE SEQUENCE portal_datastamp_serial;
CREATE FUNCTION portal_datastamp_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO portal_datastamp (tbl, backend, n, last)
    VALUES (TG_TABLE_NAME, pg_backend_pid(), 1, nextval('portal_datastamp_serial'))
    ON CONFLICT (tbl, backend)
    DO UPDATE SET n = portal_datastamp.n + 1, last = excluded.last;
    RETURN NULL;
END
$$;
"""
TRIGGERS = [
    f"CREATE TRIGGER portal_datastamp AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} FOR EACH STATEMENT EXECUTE FUNCTION portal_datastamp_bump()"  # noqa: E501, S608
    for table in WATCHED
]

DROP_TRIGGERS = [f"DROP TRIGGER IF EXISTS portal_datastamp ON {table}" for table in WATCHED]
DROP = """
DROP FUNCTION IF EXISTS portal_datastamp_bump();
DROP SEQUENCE IF EXISTS portal_datastamp_serial;
DROP TABLE IF EXISTS portal_datastamp;
"""


def create(apps, schema_editor):
    # PostgreSQL only: elsewhere (the SQLite demo) nothing is cached under stamps, every summary
    # is computed when asked (core.stamps.read_stamps).
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(CREATE, params=None)
    for statement in TRIGGERS:
        schema_editor.execute(statement, params=None)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in DROP_TRIGGERS:
        schema_editor.execute(statement, params=None)
    schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("portal", "0005_outbox_email"),
        ("inventory", "0005_node_gpu_sharing"),
        ("tenants", "0007_remove_tenant_monthly_budget"),
        ("billing", "0002_usage_daily"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
