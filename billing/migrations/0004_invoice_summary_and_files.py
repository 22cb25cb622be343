"""Invoice summary (`InvoiceSummary`, kept by triggers like `UsageDaily`), the stored
documents of issued invoices (`InvoiceFile`), and two indexes of the invoice list (its
default order; cost centers)."""

import django.db.models.deletion
import django.utils.timezone
from decimal import Decimal
from django.conf import settings
from django.db import migrations, models


SUMS = "invoices, subtotal, discount, tax, total"
GROUPED = (
    "SELECT status, count(*) AS invoices, sum(subtotal) AS subtotal, sum(discount) AS discount,"
    " sum(tax) AS tax, sum(total) AS total FROM {rows} GROUP BY status"
)
# PostgreSQL: statement-level triggers with transition tables (a COPY of thousands of invoices
# is one grouped upsert). Rows are written in status order, so that two statements queue
# rather than deadlock.
POSTGRES_ADD = f"""
CREATE FUNCTION billing_invoice_summary_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO billing_invoicesummary AS s (status, {SUMS})
    {GROUPED.format(rows="added_rows")} ORDER BY status
    ON CONFLICT (status) DO UPDATE SET
        invoices = s.invoices + EXCLUDED.invoices,
        subtotal = s.subtotal + EXCLUDED.subtotal,
        discount = s.discount + EXCLUDED.discount,
        tax = s.tax + EXCLUDED.tax,
        total = s.total + EXCLUDED.total;
    RETURN NULL;
END $$;
"""
POSTGRES_SUBTRACT = f"""
CREATE FUNCTION billing_invoice_summary_subtract() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO billing_invoicesummary AS s (status, {SUMS})
    SELECT status, -invoices, -subtotal, -discount, -tax, -total
    FROM ({GROUPED.format(rows="removed_rows")}) AS g ORDER BY status
    ON CONFLICT (status) DO UPDATE SET
        invoices = s.invoices + EXCLUDED.invoices,
        subtotal = s.subtotal + EXCLUDED.subtotal,
        discount = s.discount + EXCLUDED.discount,
        tax = s.tax + EXCLUDED.tax,
        total = s.total + EXCLUDED.total;
    RETURN NULL;
END $$;
"""
POSTGRES_TRUNCATE = """
CREATE FUNCTION billing_invoice_summary_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM billing_invoicesummary;
    RETURN NULL;
END $$;
"""
POSTGRES_TRIGGERS = [
    POSTGRES_ADD,
    POSTGRES_SUBTRACT,
    POSTGRES_TRUNCATE,
    # Named so that on an update the old rows are subtracted before the new ones are added.
    "CREATE TRIGGER billing_invoice_summary_1_deleted AFTER DELETE ON billing_invoice"
    " REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION billing_invoice_summary_subtract()",
    "CREATE TRIGGER billing_invoice_summary_1_updated_old AFTER UPDATE ON billing_invoice"
    " REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION billing_invoice_summary_subtract()",
    "CREATE TRIGGER billing_invoice_summary_2_inserted AFTER INSERT ON billing_invoice"
    " REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION billing_invoice_summary_add()",
    "CREATE TRIGGER billing_invoice_summary_2_updated_new AFTER UPDATE ON billing_invoice"
    " REFERENCING NEW TABLE AS added_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION billing_invoice_summary_add()",
    "CREATE TRIGGER billing_invoice_summary_truncated AFTER TRUNCATE ON billing_invoice"
    " FOR EACH STATEMENT EXECUTE FUNCTION billing_invoice_summary_truncate()",
]
POSTGRES_DROP = [
    "DROP TRIGGER IF EXISTS billing_invoice_summary_1_deleted ON billing_invoice",
    "DROP TRIGGER IF EXISTS billing_invoice_summary_1_updated_old ON billing_invoice",
    "DROP TRIGGER IF EXISTS billing_invoice_summary_2_inserted ON billing_invoice",
    "DROP TRIGGER IF EXISTS billing_invoice_summary_2_updated_new ON billing_invoice",
    "DROP TRIGGER IF EXISTS billing_invoice_summary_truncated ON billing_invoice",
    "DROP FUNCTION IF EXISTS billing_invoice_summary_add()",
    "DROP FUNCTION IF EXISTS billing_invoice_summary_subtract()",
    "DROP FUNCTION IF EXISTS billing_invoice_summary_truncate()",
]
BACKFILL = f"INSERT INTO billing_invoicesummary (status, {SUMS}) " + GROUPED.format(
    rows="billing_invoice"
)

# SQLite (the demo): row-level triggers, as SQLite has no other kind; its data is small.
SQLITE_ADD = f"""
    INSERT INTO billing_invoicesummary (status, {SUMS})
    VALUES (NEW.status, 1, NEW.subtotal, NEW.discount, NEW.tax, NEW.total)
    ON CONFLICT (status) DO UPDATE SET invoices = invoices + 1,
        subtotal = subtotal + excluded.subtotal, discount = discount + excluded.discount,
        tax = tax + excluded.tax, total = total + excluded.total;
"""
SQLITE_SUBTRACT = """
    UPDATE billing_invoicesummary SET invoices = invoices - 1,
        subtotal = subtotal - OLD.subtotal, discount = discount - OLD.discount,
        tax = tax - OLD.tax, total = total - OLD.total
    WHERE status = OLD.status;
"""
SQLITE_TRIGGERS = [
    "CREATE TRIGGER billing_invoice_summary_inserted AFTER INSERT ON billing_invoice"
    f" BEGIN {SQLITE_ADD} END",
    "CREATE TRIGGER billing_invoice_summary_deleted AFTER DELETE ON billing_invoice"
    f" BEGIN {SQLITE_SUBTRACT} END",
    "CREATE TRIGGER billing_invoice_summary_updated AFTER UPDATE ON billing_invoice"
    f" BEGIN {SQLITE_SUBTRACT} {SQLITE_ADD} END",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS billing_invoice_summary_inserted",
    "DROP TRIGGER IF EXISTS billing_invoice_summary_deleted",
    "DROP TRIGGER IF EXISTS billing_invoice_summary_updated",
]


def _run(schema_editor, statements: list[str]) -> None:
    for statement in statements:
        schema_editor.execute(statement, params=None)


def create_triggers(apps, schema_editor):
    """Fill the summary from the invoices there, then keep it filled (one transaction)."""
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, [BACKFILL, *POSTGRES_TRIGGERS])
    elif schema_editor.connection.vendor == "sqlite":
        _run(schema_editor, [BACKFILL, *SQLITE_TRIGGERS])
    else:
        raise NotImplementedError(
            f"No invoice summary triggers for {schema_editor.connection.vendor}"
        )


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        _run(schema_editor, POSTGRES_DROP)
    elif schema_editor.connection.vendor == "sqlite":
        _run(schema_editor, SQLITE_DROP)


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0003_usage_stamp'),
        ('tenants', '0007_remove_tenant_monthly_budget'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='InvoiceFile',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('fmt', models.CharField(max_length=4)),
                ('status', models.CharField(help_text="The invoice's status the file shows.", max_length=10)),
                ('layout', models.PositiveIntegerField(help_text='billing.documents.LAYOUT when rendered.')),
                ('body', models.BinaryField()),
                ('rendered_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
        migrations.CreateModel(
            name='InvoiceSummary',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(max_length=10, unique=True)),
                ('invoices', models.BigIntegerField(default=0)),
                ('subtotal', models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=20)),
                ('discount', models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=20)),
                ('tax', models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=20)),
                ('total', models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=20)),
            ],
            options={
                'verbose_name_plural': 'invoice summaries',
            },
        ),
        migrations.AddIndex(
            model_name='invoice',
            index=models.Index(models.OrderBy(models.F('period_start'), descending=True), models.F('tenant_name'), models.OrderBy(models.F('id'), descending=True), name='billing_invoice_list_order'),
        ),
        migrations.AddIndex(
            model_name='invoice',
            index=models.Index(fields=['cost_center'], name='billing_invoice_cost_center'),
        ),
        migrations.AddField(
            model_name='invoicefile',
            name='invoice',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='files', to='billing.invoice'),
        ),
        migrations.AddConstraint(
            model_name='invoicefile',
            constraint=models.UniqueConstraint(fields=('invoice', 'fmt'), name='one_file_per_invoice_format'),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
