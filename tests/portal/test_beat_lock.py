"""Two real `celery beat` processes on one Redis: only the holder of beat's lock sends tasks;
when it is killed, the other takes over within the lock's TTL; a stopped beat releases it."""

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from core.beat_lock import LOCK_KEY
from tests.support.fixtures_celery import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
TTL = 3
PROBE = "beat-lock-probe"


class Beat:
    def __init__(self, log: Path, env: dict[str, str]) -> None:
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "portal", "beat", "--loglevel=INFO"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def sent(self) -> int:
        return len(re.findall(rf"Sending due task {PROBE}\b", self.text()))

    def holds(self) -> bool:
        return "took the beat lock" in self.text()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


@pytest.fixture
def beats(redis_url, tmp_path):
    queue = f"test-beat-{uuid.uuid4().hex[:8]}"
    every_second, _ = IntervalSchedule.objects.get_or_create(
        every=1, period=IntervalSchedule.SECONDS
    )
    PeriodicTask.objects.create(
        name=PROBE, task="portal.beat_lock_probe", interval=every_second, queue=queue
    )
    db = settings.DATABASES["default"]
    env = os.environ | {
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "CELERY_BROKER_URL": redis_url,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "BEAT_LOCK_TTL_SECONDS": str(TTL),
    }
    started: list[Beat] = []

    def start(name: str) -> Beat:
        beat = Beat(tmp_path / f"{name}.log", env)
        started.append(beat)
        return beat

    client = redis.Redis.from_url(redis_url)
    client.delete(LOCK_KEY)
    try:
        yield start
    finally:
        for beat in started:
            beat.stop()
        client.delete(LOCK_KEY, queue)


def test_only_the_lock_holder_sends_and_the_other_takes_over_after_a_crash(beats):
    first = beats("first")
    wait_until(first.holds, timeout=20)
    second = beats("second")
    wait_until(lambda: "another beat holds the beat lock" in second.text(), timeout=20)

    wait_until(lambda: first.sent() >= 3, timeout=10)
    assert second.sent() == 0
    assert not second.holds()

    first.process.send_signal(signal.SIGKILL)  # a crash: the lock is not released
    first.process.wait(timeout=10)
    killed_at = time.monotonic()
    wait_until(second.holds, timeout=TTL + 5, every=0.1)
    assert time.monotonic() - killed_at <= TTL + 1.5  # the TTL, plus one poll of the standby
    wait_until(lambda: second.sent() >= 2, timeout=10)


def test_a_beat_stopped_cleanly_releases_the_lock_at_once(beats, redis_url):
    first = beats("first")
    wait_until(first.holds, timeout=20)
    assert redis.Redis.from_url(redis_url).get(LOCK_KEY)

    first.process.send_signal(signal.SIGTERM)
    assert first.process.wait(timeout=15) == 0
    assert redis.Redis.from_url(redis_url).get(LOCK_KEY) is None

    second = beats("second")
    wait_until(second.holds, timeout=20)
    assert "another beat holds" not in second.text()


def test_a_beat_whose_lock_was_taken_over_stops_sending_and_exits(beats, redis_url):
    first = beats("first")
    wait_until(first.holds, timeout=20)
    # As if it had stalled past the TTL and another beat had taken the lock meanwhile (and kept
    # renewing it: it outlives the test, however slowly a loaded machine lets this beat exit).
    redis.Redis.from_url(redis_url).set(LOCK_KEY, "other-host:1:abcd", px=60_000)

    assert first.process.wait(timeout=15) == 0
    assert "held by other-host:1:abcd, not by this beat" in first.text()
    assert redis.Redis.from_url(redis_url).get(LOCK_KEY) == b"other-host:1:abcd"


def test_a_second_scheduler_in_the_holding_process_shares_its_lock_and_releases_it(redis_url):
    """Beat's SIGTERM handler may build a second scheduler while the first is being built: in
    that process the lock is already its own, and closing either releases it."""
    from core.beat_lock import BeatLock

    client = redis.Redis.from_url(redis_url)
    client.delete(LOCK_KEY)
    first, second = BeatLock(redis_url, ttl=TTL), BeatLock(redis_url, ttl=TTL)
    try:
        assert first.try_acquire()
        assert second.try_acquire()
        client.set(LOCK_KEY, "elsewhere:1:0", px=TTL * 1000)  # another process's lock
        assert not second.try_acquire()
        client.set(LOCK_KEY, first.token, px=TTL * 1000)
        second.release()
        assert client.get(LOCK_KEY) is None
    finally:
        client.delete(LOCK_KEY)


def test_a_standby_beat_stops_at_once_and_leaves_the_holders_lock(beats, redis_url):
    first = beats("first")
    wait_until(first.holds, timeout=20)
    second = beats("second")
    wait_until(lambda: "another beat holds the beat lock" in second.text(), timeout=20)
    held = redis.Redis.from_url(redis_url).get(LOCK_KEY)

    second.process.send_signal(signal.SIGTERM)
    assert second.process.wait(timeout=5) == 0
    assert redis.Redis.from_url(redis_url).get(LOCK_KEY) == held
    assert first.process.poll() is None
