"""Usage per day (`UsageDaily`): the table, the triggers that keep it equal to the usage
records' sums whoever writes them, and its rows for the records already there."""

import django.db.models.deletion
from django.db import migrations, models

KEY = "day, tenant_id, resource, source"
SUMS = "records, unit_seconds, busy_seconds"

# PostgreSQL: statement-level triggers with transition tables, so that a COPY or a DELETE of a
# window's thousands of records costs one grouped upsert or update, not one per row.
POSTGRES_GROUPED = (
    "SELECT (hour AT TIME ZONE 'UTC')::date AS day, tenant_id, resource, source,"
    " count(*) AS records, sum(unit_seconds) AS unit_seconds,"
    " sum(busy_seconds) AS busy_seconds FROM {rows} GROUP BY 1, 2, 3, 4"
)
POSTGRES_ADD = f"""
CREATE FUNCTION billing_usage_daily_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- In key order, so that two windows of one day adding at once queue rather than deadlock.
    INSERT INTO billing_usagedaily AS d ({KEY}, {SUMS})
    {POSTGRES_GROUPED.format(rows="added_rows")} ORDER BY 1, 2, 3, 4
    ON CONFLICT ({KEY}) DO UPDATE SET
        records = d.records + EXCLUDED.records,
        unit_seconds = d.unit_seconds + EXCLUDED.unit_seconds,
        busy_seconds = d.busy_seconds + EXCLUDED.busy_seconds;
    RETURN NULL;
END $$;
"""
POSTGRES_SUBTRACT = f"""
CREATE FUNCTION billing_usage_daily_subtract() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE billing_usagedaily AS d SET
        records = d.records - g.records,
        unit_seconds = d.unit_seconds - g.unit_seconds,
        busy_seconds = d.busy_seconds - g.busy_seconds
    FROM ({POSTGRES_GROUPED.format(rows="removed_rows")}) AS g
    WHERE d.day = g.day AND d.tenant_id = g.tenant_id AND d.resource = g.resource
        AND d.source = g.source;
    DELETE FROM billing_usagedaily WHERE records = 0
        AND day BETWEEN (SELECT min((hour AT TIME ZONE 'UTC')::date) FROM removed_rows)
                    AND (SELECT max((hour AT TIME ZONE 'UTC')::date) FROM removed_rows);
    RETURN NULL;
END $$;
"""
POSTGRES_TRIGGERS = [
    POSTGRES_ADD,
    POSTGRES_SUBTRACT,
    # Named so that on an update the old rows are subtracted before the new ones are added.
    "CREATE TRIGGER billing_usage_daily_1_deleted AFTER DELETE ON billing_usagerecord"
    " REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION billing_usage_daily_subtract()",
    "CREATE TRIGGER billing_usage_daily_1_updated_old AFTER UPDATE ON billing_usagerecord"
    " REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION billing_usage_daily_subtract()",
    "CREATE TRIGGER billing_usage_daily_2_inserted AFTER INSERT ON billing_usagerecord"
    " REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION billing_usage_daily_add()",
    "CREATE TRIGGER billing_usage_daily_2_updated_new AFTER UPDATE ON billing_usagerecord"
    " REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION billing_usage_daily_add()",
]
POSTGRES_DROP = [
    "DROP TRIGGER IF EXISTS billing_usage_daily_1_deleted ON billing_usagerecord",
    "DROP TRIGGER IF EXISTS billing_usage_daily_1_updated_old ON billing_usagerecord",
    "DROP TRIGGER IF EXISTS billing_usage_daily_2_inserted ON billing_usagerecord",
    "DROP TRIGGER IF EXISTS billing_usage_daily_2_updated_new ON billing_usagerecord",
    "DROP FUNCTION IF EXISTS billing_usage_daily_add()",
    "DROP FUNCTION IF EXISTS billing_usage_daily_subtract()",
]
POSTGRES_BACKFILL = f"INSERT INTO billing_usagedaily ({KEY}, {SUMS}) " + POSTGRES_GROUPED.format(
    rows="billing_usagerecord"
)

# SQLite (the demo): row-level triggers, as SQLite has no other kind; its data is small.
SQLITE_ADD = f"""
    INSERT INTO billing_usagedaily ({KEY}, {SUMS})
    VALUES (date(NEW.hour), NEW.tenant_id, NEW.resource, NEW.source, 1, NEW.unit_seconds,
            NEW.busy_seconds)
    ON CONFLICT ({KEY}) DO UPDATE SET records = records + 1,
        unit_seconds = unit_seconds + excluded.unit_seconds,
        busy_seconds = busy_seconds + excluded.busy_seconds;
"""
SQLITE_SUBTRACT = """
    UPDATE billing_usagedaily SET records = records - 1,
        unit_seconds = unit_seconds - OLD.unit_seconds,
        busy_seconds = busy_seconds - OLD.busy_seconds
    WHERE day = date(OLD.hour) AND tenant_id = OLD.tenant_id AND resource = OLD.resource
        AND source = OLD.source;
    DELETE FROM billing_usagedaily WHERE day = date(OLD.hour) AND tenant_id = OLD.tenant_id
        AND resource = OLD.resource AND source = OLD.source AND records = 0;
"""
SQLITE_TRIGGERS = [
    "CREATE TRIGGER billing_usage_daily_inserted AFTER INSERT ON billing_usagerecord"
    f" BEGIN {SQLITE_ADD} END",
    "CREATE TRIGGER billing_usage_daily_deleted AFTER DELETE ON billing_usagerecord"
    f" BEGIN {SQLITE_SUBTRACT} END",
    "CREATE TRIGGER billing_usage_daily_updated AFTER UPDATE ON billing_usagerecord"
    f" BEGIN {SQLITE_SUBTRACT} {SQLITE_ADD} END",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS billing_usage_daily_inserted",
    "DROP TRIGGER IF EXISTS billing_usage_daily_deleted",
    "DROP TRIGGER IF EXISTS billing_usage_daily_updated",
]
SQLITE_BACKFILL = (
    f"INSERT INTO billing_usagedaily ({KEY}, {SUMS}) SELECT date(hour), tenant_id, resource,"
    " source, count(*), sum(unit_seconds), sum(busy_seconds) FROM billing_usagerecord"
    " GROUP BY 1, 2, 3, 4"
)


def _run(schema_editor, statements: list[str]) -> None:
    for statement in statements:
        schema_editor.execute(statement, params=None)


def create_triggers(apps, schema_editor):
    """Fill the table from the records there, then keep it filled (one transaction)."""
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, [POSTGRES_BACKFILL, *POSTGRES_TRIGGERS])
    elif schema_editor.connection.vendor == "sqlite":
        _run(schema_editor, [SQLITE_BACKFILL, *SQLITE_TRIGGERS])
    else:
        raise NotImplementedError(
            f"No usage-per-day triggers for {schema_editor.connection.vendor}"
        )


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, POSTGRES_DROP)
    elif schema_editor.connection.vendor == "sqlite":
        _run(schema_editor, SQLITE_DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0001_initial"),
        ("tenants", "0007_remove_tenant_monthly_budget"),
    ]

    operations = [
        migrations.CreateModel(
            name="UsageDaily",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("day", models.DateField(help_text="The UTC day of the records' hours.")),
                (
                    "source",
                    models.CharField(
                        choices=[
                            ("allocated", "Allocated (reserved)"),
                            ("measured", "Measured (DCGM)"),
                        ],
                        max_length=10,
                    ),
                ),
                ("resource", models.CharField(max_length=100, verbose_name="resource class")),
                ("records", models.BigIntegerField()),
                ("unit_seconds", models.BigIntegerField()),
                ("busy_seconds", models.BigIntegerField()),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="tenants.tenant",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "usage per day",
                "indexes": [
                    models.Index(fields=["source", "day"], name="billing_usa_source_56a0a8_idx")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("day", "tenant", "resource", "source"),
                        name="one_usage_daily_per_key",
                    )
                ],
            },
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
