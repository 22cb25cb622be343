"""Reading Keycloak's directory through its Admin REST API (an adapter: no ORM, no writes).

The portal authenticates as a confidential client with a service account (client-credentials
grant) whose roles are realm-management's read-only `view-users` and `query-groups`, through
python-keycloak. It pulls by group and by role, not user by user, except for the one question
only a user's own resource answers: is this account still there, and enabled?

Every failure to read (connection refused, timeout, 5xx, 401/403, a body of the wrong shape) is
raised as `DirectoryUnavailable`, so the caller can change nothing rather than act on a partial
picture. Only two answers mean "absent": 404 for a group path (nobody is in a group that does
not exist) and 404 for a user (deleted).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from keycloak import KeycloakAdmin, KeycloakOpenIDConnection
from keycloak.exceptions import KeycloakError

NOT_FOUND = 404
_FAIL = object()  # `_read` without a `missing` value: a 404 is a failure too


class DirectoryUnavailable(Exception):
    """Keycloak's directory could not be read completely."""


@dataclass(frozen=True)
class DirectoryUser:
    """What the directory says about one user (UserRepresentation)."""

    subject: str
    enabled: bool
    email: str
    email_verified: bool


def directory_configured() -> bool:
    return bool(settings.OIDC_ISSUER_URL and settings.KEYCLOAK_DIRECTORY_CLIENT_ID)


def _server_and_realm(issuer: str) -> tuple[str, str]:
    # Keycloak's issuer is <server>/realms/<realm>; the Admin API lives at <server>/admin/realms.
    server, marker, realm = issuer.rstrip("/").rpartition("/realms/")
    if not marker or not realm:
        raise DirectoryUnavailable(f"OIDC_ISSUER_URL {issuer!r} is not a Keycloak realm URL")
    return server + "/", realm


def _status(exc: KeycloakError) -> int:
    return int(getattr(exc, "response_code", 0) or 0)


def _ids(users: Any) -> set[str]:
    if not isinstance(users, list) or not all(isinstance(u, dict) and u.get("id") for u in users):
        raise DirectoryUnavailable(f"unexpected user list from Keycloak: {str(users)[:200]}")
    return {str(u["id"]) for u in users}


class KeycloakDirectory:
    """One realm's directory, read as the portal's service account."""

    def __init__(self) -> None:
        server, realm = _server_and_realm(settings.OIDC_ISSUER_URL)
        connection = KeycloakOpenIDConnection(
            server_url=server,
            realm_name=realm,
            client_id=settings.KEYCLOAK_DIRECTORY_CLIENT_ID,
            client_secret_key=settings.KEYCLOAK_DIRECTORY_CLIENT_SECRET,
            timeout=int(max(1, settings.OIDC_TIMEOUT)),
            verify=True,
        )
        self._admin = KeycloakAdmin(connection=connection)
        self._client_uuids: dict[str, str | None] = {}

    def _read(self, what: str, call, *args, missing: Any = _FAIL, **kwargs) -> Any:
        """`call(*args, **kwargs)`; on a 404 `missing` when given, else DirectoryUnavailable."""
        try:
            return call(*args, **kwargs)
        except KeycloakError as exc:
            if missing is not _FAIL and _status(exc) == NOT_FOUND:
                return missing
            raise DirectoryUnavailable(f"{what}: {exc}") from exc
        except (OSError, ValueError, TypeError) as exc:  # requests' errors are OSErrors
            raise DirectoryUnavailable(f"{what}: {exc}") from exc

    def group_member_ids(self, path: str) -> set[str]:
        """Direct members of the group at `path`; none when the group does not exist."""
        group = self._read(
            f"group {path}", self._admin.get_group_by_path, path.strip("/"), missing={}
        )
        if group == {}:
            return set()
        if not isinstance(group, dict) or not group.get("id"):
            raise DirectoryUnavailable(f"group {path}: unexpected answer {str(group)[:200]}")
        members = self._read(
            f"members of {path}",
            self._admin.get_group_members,
            group["id"],
            {"briefRepresentation": "true"},
        )
        return _ids(members)

    def realm_role_member_ids(self, role: str) -> set[str]:
        """Users holding the realm role directly (none when the realm has no such role)."""
        users = self._read(
            f"realm role {role}",
            self._admin.get_realm_role_members,
            role,
            {"briefRepresentation": "true"},
            missing=[],
        )
        return _ids(users)

    def client_role_member_ids(self, client_id: str, role: str) -> set[str]:
        """Users holding the client's role directly (none when the client has no such role)."""
        if client_id not in self._client_uuids:
            self._client_uuids[client_id] = self._read(
                f"client {client_id}", self._admin.get_client_id, client_id
            )
        uuid = self._client_uuids[client_id]
        if not uuid:
            raise DirectoryUnavailable(f"client {client_id} is not in the realm")
        users = self._read(
            f"client role {client_id}/{role}",
            self._admin.get_client_role_members,
            uuid,
            role,
            missing=[],
        )
        return _ids(users)

    def user(self, subject: str) -> DirectoryUser | None:
        """The user with this `sub`, or None when Keycloak answers 404 (deleted)."""
        found = self._read(f"user {subject}", self._admin.get_user, subject, missing=None)
        if found is None:
            return None
        if not isinstance(found, dict) or str(found.get("id")) != subject:
            raise DirectoryUnavailable(f"user {subject}: unexpected answer {str(found)[:200]}")
        if not isinstance(found.get("enabled"), bool):
            raise DirectoryUnavailable(f"user {subject}: no 'enabled' in the answer")
        return DirectoryUser(
            subject=subject,
            enabled=found["enabled"],
            email=str(found.get("email") or ""),
            email_verified=found.get("emailVerified") is True,
        )

    def users(self, subjects: Iterable[str]) -> dict[str, DirectoryUser | None]:
        return {subject: self.user(subject) for subject in subjects}
