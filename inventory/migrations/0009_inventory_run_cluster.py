
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('inventory', '0008_clusters'),
    ]

    operations = [
        migrations.AddField(
            model_name='inventoryrun',
            name='cluster',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='runs', to='inventory.cluster', to_field='slug'),
        ),
    ]
