"""Usage records carry who launched their workload and its label (issue 35): the columns only.
The records metered before take them from their workloads in 0011, in batches and outside
this migration's transaction (adding the columns is quick; a backfill here held the usage
table's ACCESS EXCLUSIVE lock until it had rewritten every record)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


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
    ]
