import core.validators
import tenants.workloads.models
from django.core.validators import MaxValueValidator
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0020_endpoint_keys'),
    ]

    operations = [
        migrations.CreateModel(
            name='NotebookImage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.SlugField(unique=True)),
                ('label', models.CharField(max_length=100, validators=[core.validators.validate_readable_name])),
                ('image', models.CharField(help_text='An OCI image reference, e.g. quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10', max_length=500, validators=[tenants.workloads.models.validate_oci_reference])),
                ('interface', models.CharField(choices=[('jupyterlab', 'JupyterLab'), ('code-server', 'VS Code (code-server)')], default='jupyterlab', max_length=20)),
                ('active', models.BooleanField(default=True)),
            ],
            options={
                'verbose_name': 'notebook image',
                'ordering': ['label'],
            },
        ),
        migrations.AddField(
            model_name='tenant',
            name='custom_notebook_images',
            field=models.BooleanField(db_default=False, default=False, help_text='Its members may launch notebooks from any image, not only the admins\u2019 list.', verbose_name='May run its own notebook images'),
        ),
        migrations.AddField(
            model_name='idlepolicy',
            name='notebook_idle_hours',
            field=models.PositiveSmallIntegerField(blank=True, help_text='Stop a notebook nobody has used for this many hours (0: never).', null=True, validators=[MaxValueValidator(720)]),
        ),
        migrations.AlterField(
            model_name='workload',
            name='kind',
            field=models.CharField(choices=[('vcluster', 'vCluster'), ('inference', 'Inference endpoint'), ('vm', 'VM'), ('slurm', 'Slurm cluster'), ('notebook', 'Notebook')], max_length=20),
        ),
    ]
