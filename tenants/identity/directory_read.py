"""Reading Keycloak's whole directory over one or more sync runs, checkpointed in the database.

The sync needs, for each tenant group path, the group's id and every page of its direct members,
and for each linked user their account and their role mappings. Each answer is stored
(DirectoryAnswer) as it arrives, under the one DirectoryRead in progress; a run that runs out of
time, or fails, keeps them, and the next run asks only for what is still missing. Only a
complete read is handed to the sync (directory_sync.py): nothing is ever decided from part of
the directory, so a slow or broken Keycloak delays changes but never takes access away.

A read begun longer ago than KEYCLOAK_DIRECTORY_READ_MAX_AGE starts over: the sync would
otherwise act on answers that old (someone taken out of a group after it was read keeps the
membership until the following complete read), and answers gathered over a long span describe
the directory at times further apart. A read of another realm or by another client starts over.
"""

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError
from django.db.models import F
from django.utils import timezone

from .directory import (
    MEMBERS_PAGE,
    DirectoryUnavailable,
    DirectoryUser,
    KeycloakDirectory,
    UserRoles,
)
from .models import DirectoryAnswer, DirectoryRead

logger = logging.getLogger(__name__)
Kind = DirectoryAnswer.Kind
Item = tuple[str, str]  # (kind, key): one answer of the read
SAVE_EVERY = 50  # answers written together; a run killed outright loses at most these


@dataclass(frozen=True)
class DirectorySnapshot:
    """The whole directory as one complete read found it."""

    groups: dict[str, set[str]]  # group path -> subjects of its direct members
    roles: dict[str, UserRoles]  # subject -> the roles mapped to them directly
    users: dict[str, DirectoryUser | None]  # subject -> the user, None when deleted
    started_at: datetime
    runs: int


def _members_key(path: str, first: int) -> str:
    return f"{first}:{path}"


def _encode(kind: str, answer: Any) -> Any:
    if kind == Kind.USER and answer is not None:
        return {"enabled": answer.enabled, "email": answer.email,
                "email_verified": answer.email_verified}
    if kind == Kind.ROLES:
        return {"realm": sorted(answer.realm),
                "clients": {c: sorted(roles) for c, roles in answer.clients.items()}}
    return answer  # a group's id (None: no such group), a page of member ids


def _decode_user(subject: str, value: dict | None) -> DirectoryUser | None:
    return None if value is None else DirectoryUser(subject=subject, **value)


def _decode_roles(value: dict) -> UserRoles:
    return UserRoles(
        realm=frozenset(value["realm"]),
        clients={c: frozenset(roles) for c, roles in value["clients"].items()},
    )


class _Progress:
    """The read in progress: its answers so far, and this run's not yet written."""

    def __init__(self, read: DirectoryRead, directory: KeycloakDirectory) -> None:
        self.read = read
        self.directory = directory
        stored = read.answers.values_list("kind", "key", "value")
        self.answers: dict[Item, Any] = {(kind, key): value for kind, key, value in stored}
        self.unsaved: list[DirectoryAnswer] = []

    def missing(self, items: Iterable[Item]) -> dict[Item, Callable[[], Any]]:
        """The reads still needed for `items`: each one unanswered, else what its answer leads to
        (a group's first page of members, the next page after a full one)."""
        needed: dict[Item, Callable[[], Any]] = {}
        todo = list(items)
        while todo:
            item = todo.pop()
            if item in self.answers:
                todo.extend(self._follow_ups(item))
            else:
                needed[item] = self._reader(item)
        return needed

    def _follow_ups(self, item: Item) -> list[Item]:
        kind, key = item
        value = self.answers[item]
        if kind == Kind.GROUP and value is not None:
            return [(Kind.MEMBERS, _members_key(key, 0))]
        if kind == Kind.MEMBERS and len(value) >= MEMBERS_PAGE:
            first, _, path = key.partition(":")
            return [(Kind.MEMBERS, _members_key(path, int(first) + MEMBERS_PAGE))]
        return []

    def _reader(self, item: Item) -> Callable[[], Any]:
        kind, key = item
        if kind == Kind.GROUP:
            return partial(self.directory.group_id, key)
        if kind == Kind.MEMBERS:
            first, _, path = key.partition(":")
            group_id = self.answers[(Kind.GROUP, path)]
            return partial(self.directory.group_member_page, path, group_id, int(first))
        if kind == Kind.USER:
            return partial(self.directory.user, key)
        return partial(self.directory.user_roles, key)

    def answered(self, item: Item, answer: Any) -> dict[Item, Callable[[], Any]]:
        """Keep an answer (read_all's `then`); returns the reads it leads to."""
        value = _encode(item[0], answer)
        self.answers[item] = value
        self.unsaved.append(DirectoryAnswer(read=self.read, kind=item[0], key=item[1], value=value))
        if len(self.unsaved) >= SAVE_EVERY:
            self.save()
        return self.missing([item])

    def save(self) -> None:
        # A run started by hand beside the periodic one may store the same answers (ignored), or
        # finish and forget the read first (then these answers have no read left to belong to).
        try:
            DirectoryAnswer.objects.bulk_create(self.unsaved, ignore_conflicts=True)
        except IntegrityError:
            logger.info("Keycloak directory read %s was finished by another run", self.read.pk)
        self.unsaved = []

    def snapshot(self, paths: list[str], subjects: list[str]) -> DirectorySnapshot:
        groups: dict[str, set[str]] = {}
        for path in paths:
            members, first = set(), 0
            if self.answers[(Kind.GROUP, path)] is not None:
                while (page := self.answers.get((Kind.MEMBERS, _members_key(path, first)))):
                    members.update(page)
                    first += MEMBERS_PAGE
            groups[path] = members
        return DirectorySnapshot(
            groups=groups,
            roles={s: _decode_roles(self.answers[(Kind.ROLES, s)]) for s in subjects},
            users={s: _decode_user(s, self.answers[(Kind.USER, s)]) for s in subjects},
            started_at=self.read.started_at,
            runs=self.read.runs,
        )


def _read_in_progress() -> DirectoryRead:
    """The read to resume, or a new one when there is none, it is too old, or reads elsewhere."""
    issuer, client_id = settings.OIDC_ISSUER_URL, settings.KEYCLOAK_DIRECTORY_CLIENT_ID
    oldest = timezone.now() - timedelta(seconds=settings.KEYCLOAK_DIRECTORY_READ_MAX_AGE)
    read = DirectoryRead.objects.first()
    if read is not None:
        if (read.issuer, read.client_id) == (issuer, client_id) and read.started_at >= oldest:
            return read
        logger.warning(
            "Keycloak directory read begun at %s (%d runs) starts over: older than "
            "KEYCLOAK_DIRECTORY_READ_MAX_AGE, or another realm or client",
            read.started_at, read.runs,
        )
    directory_read_discard()
    return DirectoryRead.objects.create(issuer=issuer, client_id=client_id)


def directory_read_discard() -> None:
    """Forget the read in progress (applied, or not to be trusted): the next run starts anew."""
    DirectoryRead.objects.all().delete()


def read_budget_seconds() -> float:
    """How long one run may read: the sync task's time limit less a minute for the writes."""
    return max(1.0, settings.KEYCLOAK_DIRECTORY_SYNC_TIME_LIMIT - 60.0)


def directory_read(*, paths: list[str], subjects: list[str]) -> DirectorySnapshot:
    """Read what is still missing of the directory for these group paths and users, resuming
    the stored read; the complete snapshot, or DirectoryUnavailable (what was read is kept)."""
    deadline = time.monotonic() + read_budget_seconds()
    directory = KeycloakDirectory()  # a malformed issuer fails here, before anything is stored
    read = _read_in_progress()
    progress = _Progress(read, directory)
    roots = [(Kind.GROUP, p) for p in paths]
    roots += [(kind, s) for s in subjects for kind in (Kind.USER, Kind.ROLES)]
    error = ""
    try:
        directory.read_all(
            progress.missing(roots), then=progress.answered, deadline=deadline,
            concurrency=settings.KEYCLOAK_DIRECTORY_CONCURRENCY,
        )
    except DirectoryUnavailable as exc:
        error = (
            f"{exc}; {len(progress.answers)} answers kept, the next run resumes this read "
            f"(begun {read.started_at:%Y-%m-%d %H:%M:%S} UTC, run {read.runs + 1})"
        )
        raise DirectoryUnavailable(error) from exc
    finally:
        progress.save()
        read.runs += 1
        DirectoryRead.objects.filter(pk=read.pk).update(
            runs=F("runs") + 1, last_run_at=timezone.now(), last_error=error[:2000]
        )
    return progress.snapshot(paths, subjects)
