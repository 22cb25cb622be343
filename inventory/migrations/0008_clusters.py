
import core.validators
import django.db.models.deletion
import django.utils.timezone
import inventory.identifiers
from django.db import migrations, models


def add_main_cluster(apps, schema_editor):
    """The cluster the portal drove before clusters were data: its own credentials; every node
    and workload so far is its."""
    apps.get_model("inventory", "Cluster").objects.get_or_create(
        slug="main", defaults={"name": "Main cluster", "credentials": "environment"}
    )


class Migration(migrations.Migration):

    dependencies = [
        ('inventory', '0007_health_event_and_validation_wording'),
    ]

    operations = [
        migrations.CreateModel(
            name='Cluster',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.CharField(help_text="Names the cluster in the portal, its task queue and its objects' labels; it cannot change once the cluster holds work.", max_length=40, unique=True, validators=[core.validators.validate_dns1123_label])),
                ('name', models.CharField(max_length=100, validators=[core.validators.validate_readable_name])),
                ('api_server', models.URLField(blank=True, help_text='Shown to people; the connection itself comes from the credentials.', verbose_name='API server')),
                ('credentials', models.CharField(choices=[('environment', "The portal's own (in-cluster account, or KUBECONFIG)"), ('kubeconfig', "A kubeconfig file on the portal's hosts"), ('secret', "A Secret holding a kubeconfig, in the portal's namespace")], default='environment', max_length=20)),
                ('kubeconfig_path', models.CharField(blank=True, help_text="A kubeconfig file readable by the portal's web and worker processes.", max_length=500, verbose_name='kubeconfig path')),
                ('kube_context', models.CharField(blank=True, help_text="The context to use (empty: the file's current context).", max_length=253, verbose_name='kubeconfig context')),
                ('secret_name', models.CharField(blank=True, help_text="A Secret in the portal's own namespace whose key `kubeconfig` holds it.", max_length=253, validators=[core.validators.validate_dns1123_label])),
                ('state', models.CharField(choices=[('active', 'Active'), ('draining', 'Draining'), ('retired', 'Retired')], db_index=True, default='active', max_length=20)),
                ('reachable', models.BooleanField(default=True, editable=False)),
                ('unreachable_since', models.DateTimeField(blank=True, editable=False, null=True)),
                ('failures', models.PositiveIntegerField(default=0, editable=False)),
                ('next_probe_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('last_error', models.TextField(blank=True, editable=False)),
                ('last_contact_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('site', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='clusters', to='inventory.site')),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.RunPython(add_main_cluster, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='node',
            name='k8s_name',
            field=models.CharField(max_length=253, validators=[inventory.identifiers.validate_k8s_node_name], verbose_name='Kubernetes node name'),
        ),
        migrations.AddField(
            model_name='node',
            name='cluster',
            field=models.ForeignKey(default='main', on_delete=django.db.models.deletion.PROTECT, related_name='nodes', to='inventory.cluster', to_field='slug'),
        ),
        migrations.AddConstraint(
            model_name='node',
            constraint=models.UniqueConstraint(fields=('cluster', 'k8s_name'), name='unique_k8s_node_per_cluster'),
        ),
    ]
