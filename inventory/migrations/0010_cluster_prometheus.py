
import core.validators
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
        migrations.AlterField(
            model_name='cluster',
            name='secret_name',
            field=models.CharField(blank=True, help_text="A Secret in the portal's own namespace whose key “kubeconfig” holds it.", max_length=253, validators=[core.validators.validate_dns1123_label]),
        ),
    ]
