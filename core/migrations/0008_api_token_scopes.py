from django.db import migrations, models


def existing_tokens_keep_every_right(apps, schema_editor):
    # A token made before scopes could do whatever its owner could: it keeps that ("admin").
    apps.get_model("portal", "ApiToken").objects.update(scopes=["admin"])


class Migration(migrations.Migration):
    dependencies = [("portal", "0007_simulated_clusters")]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scopes",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(existing_tokens_keep_every_right, migrations.RunPython.noop),
    ]
