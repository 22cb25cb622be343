"""Reading Keycloak's directory through its Admin REST API (an adapter: no ORM, no writes).

The portal authenticates as a confidential client with a service account (client-credentials
grant) whose roles are realm-management's read-only `view-users` and `query-groups` (what the
shipped realm export grants), through python-keycloak. Every call it makes needs only
`view-users`: tenant groups are read by path with their members; each linked user's own
resource says whether the account is still there and enabled, and their role mappings which
realm and client roles they hold. (Listing a role's holders would need `view-realm`, or
`view-clients` for a client's role.)

Reads run a few at a time (KEYCLOAK_DIRECTORY_CONCURRENCY) and within a time budget; each answer
is handed to the caller as it arrives, so that what was read before the budget ran out is kept
(tenants/identity/directory_read.py resumes from it at the next run).

Every failure to read (connection refused, timeout, 5xx, 401/403, a body of the wrong shape, the
budget spent) is raised as `DirectoryUnavailable` naming its cause, so the caller can change
nothing rather than act on a partial picture. Only two answers mean "absent": 404 for a group
path (nobody is in a group that does not exist) and 404 for a user (deleted).
"""

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from keycloak import KeycloakAdmin, KeycloakOpenIDConnection
from keycloak.exceptions import KeycloakError

NOT_FOUND = 404
UNAUTHORIZED, FORBIDDEN = 401, 403
MEMBERS_PAGE = 100  # a group's members are read this many at a time, each page one answer
K = TypeVar("K")
_FAIL = object()  # `_read` without a `missing` value: a 404 is a failure too


class DirectoryUnavailable(Exception):
    """Keycloak's directory could not be read completely."""


@dataclass(frozen=True)
class UserRoles:
    """The roles mapped to a user directly (their role mappings): realm roles, and the roles of
    each client by its clientId."""

    realm: frozenset[str]
    clients: dict[str, frozenset[str]]


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


def _cause(exc: Exception) -> str:
    """What went wrong, in words an operator can act on."""
    status = _status(exc) if isinstance(exc, KeycloakError) else 0
    if status == UNAUTHORIZED:
        return ("Keycloak refused the directory client's credentials (401): check "
                "KEYCLOAK_DIRECTORY_CLIENT_ID and KEYCLOAK_DIRECTORY_CLIENT_SECRET")
    if status == FORBIDDEN:
        return ("Keycloak forbade the call (403): the directory client's service account "
                "lacks the realm-management role view-users (docs/keycloak.md)")
    causes, seen = [], exc
    while seen is not None and len(causes) < 5:  # python-keycloak wraps requests' errors
        causes.append(seen)
        seen = seen.__cause__ or seen.__context__
    root = causes[-1]
    text = f"{exc}" + (f" ({type(root).__name__}: {root})" if root is not exc else "")
    if any(isinstance(c, TimeoutError) or "timeout" in type(c).__name__.lower() for c in causes):
        return (f"Keycloak did not answer within {settings.OIDC_TIMEOUT:g} s (OIDC_TIMEOUT): "
                f"{text[:200]}")
    if status:
        return f"Keycloak answered {status}: {text[:200]}"
    return f"Keycloak could not be reached: {text[:200]}"


def _ids(users: Any) -> list[str]:
    if not isinstance(users, list) or not all(isinstance(u, dict) and u.get("id") for u in users):
        raise DirectoryUnavailable(f"unexpected user list from Keycloak: {str(users)[:200]}")
    return [str(u["id"]) for u in users]


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

    def _read(self, what: str, call, *args, missing: Any = _FAIL, **kwargs) -> Any:
        """`call(*args, **kwargs)`; on a 404 `missing` when given, else DirectoryUnavailable."""
        try:
            return call(*args, **kwargs)
        except KeycloakError as exc:
            if missing is not _FAIL and _status(exc) == NOT_FOUND:
                return missing
            raise DirectoryUnavailable(f"{what}: {_cause(exc)}") from exc
        except (OSError, ValueError, TypeError) as exc:  # requests' errors are OSErrors
            raise DirectoryUnavailable(f"{what}: {_cause(exc)}") from exc

    def read_all(
        self,
        reads: dict[K, Callable[[], Any]],
        *,
        then: Callable[[K, Any], dict[K, Callable[[], Any]]],
        deadline: float,
        concurrency: int,
    ) -> int:
        """Run every read, `concurrency` at a time, handing each answer to `then(key, answer)`
        (on this thread) as it arrives; the reads `then` returns run too. Returns how many ran.

        The first failure, or `deadline` (time.monotonic()) passing first, is
        DirectoryUnavailable; the answers handed over before it stand.
        """
        queue = deque(reads.items())
        if not queue:
            return 0
        key, read = queue.popleft()
        queue.extend(then(key, read()).items())  # one alone first: it fetches the access token
        done, running, error = 1, {}, None
        pool = ThreadPoolExecutor(max_workers=max(1, concurrency),
                                  thread_name_prefix="keycloak-directory")
        try:
            while (queue or running) and error is None:
                if time.monotonic() >= deadline:
                    raise DirectoryUnavailable(
                        f"Keycloak answered too slowly: {done} reads done in this run and at "
                        f"least {len(queue) + len(running)} left when its time budget ran out "
                        "(KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT, KEYCLOAK_DIRECTORY_CONCURRENCY)"
                    )
                while queue and len(running) < max(1, concurrency):
                    key, read = queue.popleft()
                    running[pool.submit(read)] = key
                finished, _ = wait(running, timeout=max(0.0, deadline - time.monotonic()),
                                   return_when=FIRST_COMPLETED)
                for future in finished:  # every answer that came, even beside a failure
                    key = running.pop(future)
                    if future.exception() is not None:
                        error = error or future.exception()
                        continue
                    queue.extend(then(key, future.result()).items())
                    done += 1
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if error is not None:
            raise error
        return done

    def group_id(self, path: str) -> str | None:
        """The id of the group at `path`; None when it does not exist (nobody is in it)."""
        group = self._read(
            f"group {path}", self._admin.get_group_by_path, path.strip("/"), missing={}
        )
        if group == {}:
            return None
        if not isinstance(group, dict) or not group.get("id"):
            raise DirectoryUnavailable(f"group {path}: unexpected answer {str(group)[:200]}")
        return str(group["id"])

    def group_member_page(self, path: str, group_id: str, first: int) -> list[str]:
        """The ids of one page (MEMBERS_PAGE) of the direct members of a group, from `first`."""
        members = self._read(
            f"members of {path}",
            self._admin.get_group_members,
            group_id,
            {"briefRepresentation": "true", "first": first, "max": MEMBERS_PAGE},
        )
        return _ids(members)  # as many as Keycloak sent: a full page means read on

    def user_roles(self, subject: str) -> UserRoles:
        """The roles mapped to the user directly (none when Keycloak answers 404: deleted)."""
        found = self._read(
            f"role mappings of user {subject}", self._admin.get_all_roles_of_user, subject,
            missing={},
        )
        if not isinstance(found, dict):
            raise DirectoryUnavailable(
                f"role mappings of user {subject}: unexpected answer {str(found)[:200]}"
            )
        try:
            realm = frozenset(str(r["name"]) for r in found.get("realmMappings") or [])
            clients = {
                str(client_id): frozenset(str(r["name"]) for r in (m.get("mappings") or []))
                for client_id, m in (found.get("clientMappings") or {}).items()
            }
        except (AttributeError, KeyError, TypeError) as exc:
            raise DirectoryUnavailable(
                f"role mappings of user {subject}: unexpected answer {str(found)[:200]}"
            ) from exc
        return UserRoles(realm=realm, clients=clients)

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
