
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('inventory', '0009_inventory_run_cluster'),
        ('tenants', '0022_endpoint_key_grace'),
    ]

    operations = [
        migrations.AddField(
            model_name='observesweep',
            name='cluster',
            field=models.OneToOneField(default='main', on_delete=django.db.models.deletion.CASCADE, related_name='observe_sweep', to='inventory.cluster', to_field='slug'),
        ),
        migrations.AddField(
            model_name='workload',
            name='cluster',
            field=models.ForeignKey(default='main', on_delete=django.db.models.deletion.PROTECT, related_name='workloads', to='inventory.cluster', to_field='slug'),
        ),
    ]
