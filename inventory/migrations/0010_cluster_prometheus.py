
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('inventory', '0009_inventory_run_cluster'),
    ]

    operations = [
        migrations.AddField(
            model_name='cluster',
            name='prometheus_url',
            field=models.URLField(blank=True, help_text="The Prometheus that scrapes this cluster's DCGM exporters (one per cluster or per site); empty: the fleet's (PROMETHEUS_URL).", verbose_name='Prometheus URL'),
        ),
    ]
