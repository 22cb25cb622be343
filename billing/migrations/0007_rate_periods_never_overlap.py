"""On PostgreSQL, two rates of one resource class can never cover the same instant: an
exclusion constraint over [valid_from, valid_to) per class (btree_gist gives GiST the `=` on the
class). `billing.services.rates` checks the same under a lock and turns a violation into a form
error; this is the database's guarantee behind it. Other databases (the SQLite demo) rely on
the service's check alone, so the migration does nothing there."""

from django.db import migrations

CONSTRAINT = "billing_rate_periods_never_overlap"


def add_constraint(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
    schema_editor.execute(
        f"ALTER TABLE billing_rate ADD CONSTRAINT {CONSTRAINT} EXCLUDE USING gist "
        "(resource WITH =, tstzrange(valid_from, valid_to, '[)') WITH &&)"
    )


def drop_constraint(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"ALTER TABLE billing_rate DROP CONSTRAINT IF EXISTS {CONSTRAINT}")


class Migration(migrations.Migration):

    dependencies = [
        ("billing", "0006_metering_flags"),
    ]

    operations = [
        migrations.RunPython(add_constraint, drop_constraint, elidable=False),
    ]
