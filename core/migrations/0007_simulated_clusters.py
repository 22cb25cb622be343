
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('portal', '0006_data_stamps'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='simulatedobject',
            name='unique_simulated_object',
        ),
        migrations.AddField(
            model_name='simulatedobject',
            name='cluster',
            field=models.CharField(default='main', max_length=40),
        ),
        migrations.AddConstraint(
            model_name='simulatedobject',
            constraint=models.UniqueConstraint(fields=('cluster', 'api_version', 'kind', 'namespace', 'name'), name='unique_simulated_object_per_cluster'),
        ),
    ]
