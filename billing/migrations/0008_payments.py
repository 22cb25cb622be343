"""Payments (`Payment`: an amount, a date and a reference; several may settle one invoice), what
credit notes and payments add up to on each invoice (`amount_credited`, `amount_paid`) and in
the invoice summary (`credited`, `paid`, summed by its triggers from now on).

Every invoice marked paid before becomes one payment: of its total less the credit notes issued
before it was paid, on the day it was paid, with its reference (none when credits covered it).
"""

import importlib
from datetime import UTC
from decimal import Decimal

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

SUMS = "invoices, subtotal, discount, tax, total, credited, paid"
GROUPED = (
    "SELECT status, count(*) AS invoices, sum(subtotal) AS subtotal, sum(discount) AS discount,"
    " sum(tax) AS tax, sum(total) AS total, sum(amount_credited) AS credited,"
    " sum(amount_paid) AS paid FROM {rows} GROUP BY status"
)
_UPSERT = """
    ON CONFLICT (status) DO UPDATE SET
        invoices = s.invoices + EXCLUDED.invoices,
        subtotal = s.subtotal + EXCLUDED.subtotal,
        discount = s.discount + EXCLUDED.discount,
        tax = s.tax + EXCLUDED.tax,
        total = s.total + EXCLUDED.total,
        credited = s.credited + EXCLUDED.credited,
        paid = s.paid + EXCLUDED.paid;
"""
# PostgreSQL: the functions of migration 0004's statement-level triggers, now summing the
# settlement too (the triggers call them by name: replacing them is enough).
POSTGRES_FUNCTIONS = [
    f"""
CREATE OR REPLACE FUNCTION billing_invoice_summary_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO billing_invoicesummary AS s (status, {SUMS})
    {GROUPED.format(rows="added_rows")} ORDER BY status
    {_UPSERT}
    RETURN NULL;
END $$;
""",
    f"""
CREATE OR REPLACE FUNCTION billing_invoice_summary_subtract() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO billing_invoicesummary AS s (status, {SUMS})
    SELECT status, -invoices, -subtotal, -discount, -tax, -total, -credited, -paid
    FROM ({GROUPED.format(rows="removed_rows")}) AS g ORDER BY status
    {_UPSERT}
    RETURN NULL;
END $$;
""",
]
SQLITE_ADD = f"""
    INSERT INTO billing_invoicesummary (status, {SUMS})
    VALUES (NEW.status, 1, NEW.subtotal, NEW.discount, NEW.tax, NEW.total, NEW.amount_credited,
            NEW.amount_paid)
    ON CONFLICT (status) DO UPDATE SET invoices = invoices + 1,
        subtotal = subtotal + excluded.subtotal, discount = discount + excluded.discount,
        tax = tax + excluded.tax, total = total + excluded.total,
        credited = credited + excluded.credited, paid = paid + excluded.paid;
"""
SQLITE_SUBTRACT = """
    UPDATE billing_invoicesummary SET invoices = invoices - 1,
        subtotal = subtotal - OLD.subtotal, discount = discount - OLD.discount,
        tax = tax - OLD.tax, total = total - OLD.total,
        credited = credited - OLD.amount_credited, paid = paid - OLD.amount_paid
    WHERE status = OLD.status;
"""
SQLITE_TRIGGERS = [
    "DROP TRIGGER IF EXISTS billing_invoice_summary_inserted",
    "DROP TRIGGER IF EXISTS billing_invoice_summary_deleted",
    "DROP TRIGGER IF EXISTS billing_invoice_summary_updated",
    "CREATE TRIGGER billing_invoice_summary_inserted AFTER INSERT ON billing_invoice"
    f" BEGIN {SQLITE_ADD} END",
    "CREATE TRIGGER billing_invoice_summary_deleted AFTER DELETE ON billing_invoice"
    f" BEGIN {SQLITE_SUBTRACT} END",
    "CREATE TRIGGER billing_invoice_summary_updated AFTER UPDATE ON billing_invoice"
    f" BEGIN {SQLITE_SUBTRACT} {SQLITE_ADD} END",
]
CREDITED = (
    "UPDATE billing_invoice SET amount_credited = (SELECT sum(c.amount) FROM"
    " billing_creditnote c WHERE c.invoice_id = billing_invoice.id)"
    " WHERE EXISTS (SELECT 1 FROM billing_creditnote c WHERE c.invoice_id = billing_invoice.id)"
)
PAID = (
    "UPDATE billing_invoice SET amount_paid = (SELECT sum(p.amount) FROM"
    " billing_payment p WHERE p.invoice_id = billing_invoice.id)"
    " WHERE EXISTS (SELECT 1 FROM billing_payment p WHERE p.invoice_id = billing_invoice.id)"
)
RESUM = ["DELETE FROM billing_invoicesummary",
         f"INSERT INTO billing_invoicesummary (status, {SUMS}) "
         + GROUPED.format(rows="billing_invoice")]


def _run(schema_editor, statements):
    for statement in statements:
        schema_editor.execute(statement, params=None)


def sum_settlement(apps, schema_editor):
    """Sum the settlement in the summary from now on, record a payment for every invoice paid
    so far, and sum every invoice's credit notes and payments onto it."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        _run(schema_editor, POSTGRES_FUNCTIONS)
    elif vendor == "sqlite":
        _run(schema_editor, SQLITE_TRIGGERS)
    Invoice = apps.get_model("billing", "Invoice")
    CreditNote = apps.get_model("billing", "CreditNote")
    Payment = apps.get_model("billing", "Payment")
    paid = Invoice.objects.filter(status="paid").values_list(
        "pk", "total", "paid_at", "paid_by_id", "payment_reference")
    payments = []
    for pk, total, paid_at, paid_by, reference in paid.iterator(chunk_size=2000):
        paid_at = paid_at or django.utils.timezone.now()
        earlier = CreditNote.objects.filter(invoice_id=pk, created_at__lte=paid_at)
        credited = sum(earlier.values_list("amount", flat=True), Decimal("0"))
        if total - credited > 0:
            payments.append(Payment(invoice_id=pk, amount=total - credited,
                                    date=paid_at.astimezone(UTC).date(), reference=reference,
                                    recorded_by_id=paid_by, created_at=paid_at))
    Payment.objects.bulk_create(payments, batch_size=2000)
    _run(schema_editor, [CREDITED, PAID, *RESUM])


def restore_0004(apps, schema_editor):
    """The summary's triggers as migration 0004 wrote them (the new columns go next)."""
    previous = importlib.import_module("billing.migrations.0004_invoice_summary_and_files")
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        _run(schema_editor, [
            previous.POSTGRES_ADD.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"),
            previous.POSTGRES_SUBTRACT.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"),
        ])
    elif vendor == "sqlite":
        _run(schema_editor, [*previous.SQLITE_DROP, *previous.SQLITE_TRIGGERS])


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0007_rate_periods_never_overlap'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='invoice',
            name='amount_credited',
            field=models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=14),
        ),
        migrations.AddField(
            model_name='invoice',
            name='amount_paid',
            field=models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=14),
        ),
        migrations.AddField(
            model_name='invoicesummary',
            name='credited',
            field=models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=20),
        ),
        migrations.AddField(
            model_name='invoicesummary',
            name='paid',
            field=models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=20),
        ),
        migrations.CreateModel(
            name='Payment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('amount', models.DecimalField(decimal_places=2, max_digits=14, validators=[django.core.validators.MinValueValidator(Decimal('0.01'))])),
                ('date', models.DateField(help_text='The day the money was received.')),
                ('reference', models.CharField(blank=True, max_length=100)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('invoice', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='payments', to='billing.invoice')),
                ('recorded_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['date', 'id'],
                'constraints': [models.CheckConstraint(condition=models.Q(('amount__gt', 0)), name='payment_positive')],
            },
        ),
        migrations.RunPython(sum_settlement, restore_0004),
    ]
