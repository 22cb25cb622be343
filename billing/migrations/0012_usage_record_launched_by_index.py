"""An index on the usage records' launcher, where they have one: deleting a user sets its
records' launcher to null, which without it scans the whole usage table. Partial: measured
records, and allocated ones of no launcher, are not in it.

Built concurrently on PostgreSQL (docs/upgrade.md: a new index on a large table must not block
its writes, metering's, while it builds), so not atomic. `AddIndexConcurrently` cannot build on
the SQLite demo, so the state has the plain index and the database is told per vendor."""

from django.db import migrations, models

INDEX = models.Index(fields=["launched_by"], condition=models.Q(launched_by__isnull=False),
                     name="usage_launched_by_idx")


def create_index(apps, schema_editor):
    model = apps.get_model("billing", "UsageRecord")
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.add_index(model, INDEX)
        return
    # A concurrent build that failed half-way leaves an invalid index of this name behind.
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX.name}")
    schema_editor.add_index(model, INDEX, concurrently=True)


def drop_index(apps, schema_editor):
    model = apps.get_model("billing", "UsageRecord")
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.remove_index(model, INDEX)
        return
    schema_editor.remove_index(model, INDEX, concurrently=True)


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ("billing", "0011_usage_record_attribution_backfill"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="usagerecord", index=INDEX)],
            database_operations=[migrations.RunPython(create_index, drop_index)],
        ),
    ]
