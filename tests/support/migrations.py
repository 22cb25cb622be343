"""Migration tests: move the test database to a migration state and back."""

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets: list[tuple[str, str]]) -> Apps:
    """Migrate the database to `targets` (app, migration) and return the models as they were
    there (`apps.get_model`)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest() -> None:
    """Migrate the database to every app's latest migration: after a test moved it back, the
    tests after it (in the same worker) find the schema the code has."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
