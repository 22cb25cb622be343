"""The suite leaves no keys behind in Redis: at the end of a run, the database index it used
(TEST_REDIS_URL, one per parallel process) is flushed, and no other index is touched."""

import os
import subprocess
import sys
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[2]
PROBE = '''
import redis


def test_leaves_a_key_behind(redis_url):
    redis.Redis.from_url(redis_url).set("left-behind", "1")
    assert redis.Redis.from_url(redis_url).get("left-behind") == b"1"
'''


def test_a_run_flushes_the_redis_database_it_used_and_no_other(own_redis, tmp_path):
    ours, other = (redis.Redis(host="127.0.0.1", port=own_redis.port, db=n) for n in (3, 5))
    other.set("someone-elses", "1")
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["TEST_REDIS_URL"] = f"redis://127.0.0.1:{own_redis.port}/3"

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-c", os.devnull, "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", "-p", "no:django", "-p", "tests.support.fixtures_redis",
         str(probe)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
    assert ours.dbsize() == 0  # the key the test left is gone
    assert other.get("someone-elses") == b"1"
