"""Usage stamps (`UsageStamp`): changes counted per UTC day by database triggers whenever a
usage record, a metering window or a cross-check of that day is written, and on every day
(`ALL_DAYS`) when a tenant's name, slug or cost center changes, or a tenant is added or removed. The usage explorer caches its
summaries under the sum of its range's counters."""

from django.db import migrations, models

ALL_DAYS = "0001-01-01"
HOURLY_TABLES = ("billing_usagerecord", "billing_meteringwindow", "billing_crosscheck")

# PostgreSQL: statement-level triggers with transition tables (one insert per statement, not per
# row). A write never waits for another: it appends a row of one change per day it touches,
# never updating a shared row (which would queue concurrent metering runs on it, or deadlock
# them against the metering windows they lock), and folds the day's committed rows that no one
# else is folding (SKIP LOCKED) into it, so that a day keeps a row or two and a range's sum of
# changes grows by one with each committed statement.
STAMP_DAYS = """
    WITH days AS ({days}),
    folded AS (
        DELETE FROM billing_usagestamp WHERE id IN (
            SELECT id FROM billing_usagestamp WHERE day IN (SELECT day FROM days)
            FOR UPDATE SKIP LOCKED
        ) RETURNING day, changes
    )
    INSERT INTO billing_usagestamp (day, changes)
    SELECT days.day, 1 + COALESCE((SELECT sum(changes) FROM folded WHERE folded.day = days.day), 0)
    FROM days;
"""
POSTGRES_FUNCTIONS = [
    f"""
CREATE FUNCTION billing_usage_stamp_days() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {STAMP_DAYS.format(
        days="SELECT DISTINCT (hour AT TIME ZONE 'UTC')::date AS day FROM changed_rows"
    )}
    RETURN NULL;
END $$;
""",
    f"""
CREATE FUNCTION billing_usage_stamp_all_days() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {STAMP_DAYS.format(days=f"SELECT DATE '{ALL_DAYS}' AS day")}
    RETURN NULL;
END $$;
""",
]


def _postgres_triggers(table: str) -> list[str]:
    name = f"{table}_usage_stamp"
    run = "FOR EACH STATEMENT EXECUTE FUNCTION billing_usage_stamp_days()"
    return [
        f"CREATE TRIGGER {name}_inserted AFTER INSERT ON {table}"
        f" REFERENCING NEW TABLE AS changed_rows {run}",
        f"CREATE TRIGGER {name}_deleted AFTER DELETE ON {table}"
        f" REFERENCING OLD TABLE AS changed_rows {run}",
        # An update may move a row to another day: both days are raised.
        f"CREATE TRIGGER {name}_updated_old AFTER UPDATE ON {table}"
        f" REFERENCING OLD TABLE AS changed_rows {run}",
        f"CREATE TRIGGER {name}_updated_new AFTER UPDATE ON {table}"
        f" REFERENCING NEW TABLE AS changed_rows {run}",
    ]


TENANT_CHANGED = (
    "OLD.slug IS DISTINCT FROM NEW.slug OR OLD.name IS DISTINCT FROM NEW.name"
    " OR OLD.cost_center IS DISTINCT FROM NEW.cost_center"
)
POSTGRES_TRIGGERS = [
    *POSTGRES_FUNCTIONS,
    *[trigger for table in HOURLY_TABLES for trigger in _postgres_triggers(table)],
    # Row-level, so that only a change of what the explorer shows (not a reconcile) raises it.
    "CREATE TRIGGER tenants_tenant_usage_stamp AFTER UPDATE OF slug, name, cost_center"
    f" ON tenants_tenant FOR EACH ROW WHEN ({TENANT_CHANGED})"
    " EXECUTE FUNCTION billing_usage_stamp_all_days()",
    # A tenant added or removed may add or remove a cost center of the explorer's filter.
    "CREATE TRIGGER tenants_tenant_usage_stamp_added_removed AFTER INSERT OR DELETE"
    " ON tenants_tenant FOR EACH STATEMENT EXECUTE FUNCTION billing_usage_stamp_all_days()",
]
POSTGRES_DROP = [
    *[
        f"DROP TRIGGER IF EXISTS {table}_usage_stamp_{event} ON {table}"
        for table in HOURLY_TABLES
        for event in ("inserted", "deleted", "updated_old", "updated_new")
    ],
    "DROP TRIGGER IF EXISTS tenants_tenant_usage_stamp ON tenants_tenant",
    "DROP TRIGGER IF EXISTS tenants_tenant_usage_stamp_added_removed ON tenants_tenant",
    "DROP FUNCTION IF EXISTS billing_usage_stamp_days()",
    "DROP FUNCTION IF EXISTS billing_usage_stamp_all_days()",
]

# SQLite (the demo): row-level triggers, as SQLite has no other kind; one writer at a time, so
# a day keeps one row.
SQLITE_RAISE = (
    "UPDATE billing_usagestamp SET changes = changes + 1 WHERE day = {day};"
    " INSERT INTO billing_usagestamp (day, changes) SELECT {day}, 1"
    " WHERE NOT EXISTS (SELECT 1 FROM billing_usagestamp WHERE day = {day});"
)


def _sqlite_triggers(table: str) -> list[str]:
    old, new = SQLITE_RAISE.format(day="date(OLD.hour)"), SQLITE_RAISE.format(day="date(NEW.hour)")
    name = f"{table}_usage_stamp"
    return [
        f"CREATE TRIGGER {name}_inserted AFTER INSERT ON {table} BEGIN {new} END",
        f"CREATE TRIGGER {name}_deleted AFTER DELETE ON {table} BEGIN {old} END",
        f"CREATE TRIGGER {name}_updated AFTER UPDATE ON {table} BEGIN {old} {new} END",
    ]


SQLITE_TRIGGERS = [
    *[trigger for table in HOURLY_TABLES for trigger in _sqlite_triggers(table)],
    "CREATE TRIGGER tenants_tenant_usage_stamp AFTER UPDATE OF slug, name, cost_center"
    " ON tenants_tenant FOR EACH ROW WHEN"
    f" {TENANT_CHANGED.replace('IS DISTINCT FROM', 'IS NOT')}"
    f" BEGIN {SQLITE_RAISE.format(day=repr(ALL_DAYS))} END",
    "CREATE TRIGGER tenants_tenant_usage_stamp_added AFTER INSERT ON tenants_tenant"
    f" BEGIN {SQLITE_RAISE.format(day=repr(ALL_DAYS))} END",
    "CREATE TRIGGER tenants_tenant_usage_stamp_removed AFTER DELETE ON tenants_tenant"
    f" BEGIN {SQLITE_RAISE.format(day=repr(ALL_DAYS))} END",
]
SQLITE_DROP = [
    *[
        f"DROP TRIGGER IF EXISTS {table}_usage_stamp_{event}"
        for table in HOURLY_TABLES
        for event in ("inserted", "deleted", "updated")
    ],
    "DROP TRIGGER IF EXISTS tenants_tenant_usage_stamp",
    "DROP TRIGGER IF EXISTS tenants_tenant_usage_stamp_added",
    "DROP TRIGGER IF EXISTS tenants_tenant_usage_stamp_removed",
]


def _run(schema_editor, statements: list[str]) -> None:
    for statement in statements:
        schema_editor.execute(statement, params=None)


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, POSTGRES_TRIGGERS)
    elif schema_editor.connection.vendor == "sqlite":
        _run(schema_editor, SQLITE_TRIGGERS)
    else:
        raise NotImplementedError(f"No usage stamp triggers for {schema_editor.connection.vendor}")


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, POSTGRES_DROP)
    elif schema_editor.connection.vendor == "sqlite":
        _run(schema_editor, SQLITE_DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0002_usage_daily"),
        ("tenants", "0007_remove_tenant_monthly_budget"),
    ]

    operations = [
        migrations.CreateModel(
            name="UsageStamp",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("day", models.DateField(db_index=True)),
                ("changes", models.BigIntegerField()),
            ],
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
