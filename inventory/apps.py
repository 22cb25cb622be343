from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _a_fleet_has_a_cluster(sender: AppConfig, using: str = "default", **kwargs) -> None:
    """A portal always drives at least one cluster: with none (a new database, or one flushed),
    the default one, reached with the portal's own credentials, is there."""
    from .models import DEFAULT_CLUSTER, Cluster

    if not Cluster.objects.using(using).exists():
        Cluster.objects.using(using).get_or_create(
            slug=DEFAULT_CLUSTER, defaults={"name": "Main cluster"}
        )


class InventoryConfig(AppConfig):
    name = "inventory"
    verbose_name = "Hardware inventory"

    def ready(self) -> None:
        # Register the tasks in every process, so that services can queue them by name.
        from . import tasks  # noqa: F401

        post_migrate.connect(_a_fleet_has_a_cluster, sender=self)
