"""Usage records carry who launched their workload and its label (issue 35): existing allocated
records take them from their workloads."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_from_workloads(apps, schema_editor):
    """Every record of a workload takes its launcher and label, in one UPDATE."""
    UsageRecord = apps.get_model("billing", "UsageRecord")
    Workload = apps.get_model("tenants", "Workload")
    workload = Workload.objects.filter(pk=OuterRef("workload_id"))
    UsageRecord.objects.filter(workload__isnull=False).update(
        launched_by_id=Subquery(workload.values("launched_by_id")[:1]),
        label=Subquery(workload.values("label")[:1]),
    )


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0009_usage_record_cluster'),
        ('tenants', '0027_workload_label'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='usagerecord',
            name='label',
            field=models.CharField(blank=True, db_default='', default='', max_length=63),
        ),
        migrations.AddField(
            model_name='usagerecord',
            name='launched_by',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.RunPython(copy_from_workloads, migrations.RunPython.noop, elidable=True),
    ]
