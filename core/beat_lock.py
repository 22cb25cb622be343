"""Celery beat's own lock, so that two beats never send the same periodic tasks.

The manifests run beat as one replica (a Deployment with `strategy: Recreate`), but a rollout,
a node that goes silent, or an operator starting one by hand can still make two. The scheduler
here (CELERY_BEAT_SCHEDULER) holds a lock in Redis (the broker's): taken when beat starts,
renewed at every tick, released when it stops. A second beat waits until the lock is free, then
takes over; a beat that finds its lock taken by another (it stalled past the TTL) exits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
import uuid

import redis
from django.conf import settings
from django_celery_beat.schedulers import DatabaseScheduler

logger = logging.getLogger(__name__)

LOCK_KEY = "portal:celery-beat:lock"
# One token per beat process: beat's SIGTERM handler may build a second scheduler while the
# first is still being built, and that one must see the lock as its own (and release it).
_PROCESS_TOKEN = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

# Renew only while we still hold it; release only our own lock (compare-and-set in Redis).
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"  # noqa: E501
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"  # noqa: E501


class BeatLockLost(SystemExit):
    """Another beat holds the lock this one thought it held: stop sending at once."""


class BeatLock:
    """The lock in Redis at `url`: `acquire()` waits for it, `renew()`, `release()`."""

    def __init__(self, url: str, *, ttl: int) -> None:
        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self.ttl = ttl
        self.token = _PROCESS_TOKEN

    def holder(self) -> str:
        value = self.client.get(LOCK_KEY)
        return value.decode() if value else ""

    def try_acquire(self) -> bool:
        if self.client.set(LOCK_KEY, self.token, nx=True, px=self.ttl * 1000):
            return True
        return self.holder() == self.token

    def acquire(self) -> None:
        """Wait until this beat holds the lock (a standby beat waits here until shut down)."""
        announced = False
        while True:
            try:
                if self.try_acquire():
                    logger.warning("beat: took the beat lock %s as %s", LOCK_KEY, self.token)
                    return
                if not announced:
                    logger.warning(
                        "beat: another beat holds the beat lock %s (%s); this one sends nothing "
                        "and takes over when that one is gone",
                        LOCK_KEY,
                        self.holder(),
                    )
                    announced = True
            except redis.RedisError as exc:
                logger.warning("beat: cannot reach Redis for the beat lock: %s", exc)
            time.sleep(max(1.0, self.ttl / 3))

    def renew(self) -> None:
        try:
            held = self.client.eval(_RENEW, 1, LOCK_KEY, self.token, self.ttl * 1000)
        except redis.RedisError as exc:
            # Keep going: if Redis is back before the TTL runs out, nothing was lost.
            logger.warning("beat: cannot renew the beat lock: %s", exc)
            return
        if not held:
            message = (
                f"beat: the beat lock {LOCK_KEY} is held by {self.holder() or 'nobody'}, not by "
                "this beat (it stalled past the lock's TTL); exiting so that only one beat sends"
            )
            logger.error(message)
            raise BeatLockLost(message)

    def release(self) -> None:
        try:
            self.client.eval(_RELEASE, 1, LOCK_KEY, self.token)
        except redis.RedisError as exc:
            logger.warning("beat: cannot release the beat lock (it expires by itself): %s", exc)


@contextlib.contextmanager
def _stop_signals_deferred():
    """SIGTERM and SIGINT wait until the block is done: beat's handler closes the scheduler,
    and run inside the scheduler's database calls it would have its exit swallowed by them."""
    stops = {signal.SIGTERM, signal.SIGINT}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _redis_broker() -> str:
    url = settings.CELERY_BROKER_URL
    return url if url.startswith(("redis://", "rediss://")) else ""


class LockedDatabaseScheduler(DatabaseScheduler):
    """django-celery-beat's scheduler, run only by the beat that holds the beat lock.

    Beat's SIGTERM handler closes `service.scheduler`; arriving while that scheduler is still
    being built (a standby waiting for the lock, or the schedule being read), it builds a second
    one. That second one is an empty stand-in that releases the lock when closed, and the
    handler's exit then stops the first: from the standby's wait at once, from the schedule's
    database calls (which would swallow it) once they are done."""

    _building = False  # a scheduler of this process is being built

    def __init__(self, *args, **kwargs) -> None:
        url = _redis_broker()
        # A lazy scheduler is only built to describe it (beat's start-up banner): it never ticks.
        lazy = kwargs.get("lazy", False)
        self._beat_lock = BeatLock(url, ttl=settings.BEAT_LOCK_TTL_SECONDS) if url else None
        self._stand_in = LockedDatabaseScheduler._building and not lazy
        if self._stand_in:
            return
        if not url:
            logger.warning("beat: the broker is not Redis; running without the beat lock")
        LockedDatabaseScheduler._building = not lazy
        try:
            if self._beat_lock is not None and not lazy:
                # Before the scheduler reads or writes the schedule: a standby touches nothing.
                self._beat_lock.acquire()
            with _stop_signals_deferred():
                super().__init__(*args, **kwargs)
        finally:
            LockedDatabaseScheduler._building = False
        if lazy:
            self._beat_lock = None
        elif self._beat_lock is not None:
            # Renew well within the TTL, whatever the next due task.
            self.max_interval = min(self.max_interval, max(1, self._beat_lock.ttl // 3))

    def tick(self, *args, **kwargs):
        if self._beat_lock is not None:
            self._beat_lock.renew()
        return super().tick(*args, **kwargs)

    def close(self) -> None:
        try:
            if not self._stand_in:
                super().close()
        finally:
            if self._beat_lock is not None:
                self._beat_lock.release()
