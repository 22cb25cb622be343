"""Celery tasks of identity: the periodic pull of Keycloak's directory."""

from celery import shared_task
from django.conf import settings

from .directory_sync import keycloak_directory_sync


class DirectorySyncFailed(Exception):
    """The directory could not be read whole; nothing changed (audited), the next run resumes."""


# Acknowledged on receipt, not late: the sync may run longer than the broker's visibility
# timeout (a slow Keycloak), and a lost run is simply the next one, KEYCLOAK_DIRECTORY_SYNC_SECONDS
# later. Its own time limit, not the default task's: its reads stop a minute before it.
@shared_task(
    acks_late=False,
    time_limit=settings.KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT,
    soft_time_limit=settings.KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT - 10,
)
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
