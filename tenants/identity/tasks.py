"""Celery tasks of identity: the periodic pull of Keycloak's directory."""

from celery import shared_task

from .directory_sync import keycloak_directory_sync


class DirectorySyncFailed(Exception):
    """The directory could not be read; nothing changed (audited), the next run tries again."""


@shared_task(acks_late=True)
def keycloak_directory_sync_task() -> dict:
    """Periodic (beat): reconcile Keycloak-sourced users with Keycloak's directory."""
    result = keycloak_directory_sync()
    if not result.ok:
        # Raised so the task's failure shows in the worker metrics; beat runs it again later.
        raise DirectorySyncFailed(result.error)
    return {
        "configured": result.configured,
        "users": result.users,
        "deactivated": result.deactivated,
        "tokens_revoked": result.tokens_revoked,
    }
