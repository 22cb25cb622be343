"""`make demo` runs on SQLite: its migrations apply, its data loads, and every page the benchmark
measures answers there, although the suite otherwise runs on PostgreSQL (raw SQL written for
PostgreSQL alone once broke the demo's fleet overview and review queues)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_on_sqlite_serves_every_benchmarked_page(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("DJANGO_", "PYTEST", "DATABASE_URL"))}
    env |= {"DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
            "DJANGO_SETTINGS_MODULE": "portal.settings", "SECRET_KEY": "demo-test",
            "ALLOWED_HOSTS": "testserver", "LOG_LEVEL": "ERROR", "PYTHONPATH": str(ROOT)}
    env.pop("PORTAL_ENV", None)
    for command in (["migrate", "--no-input", "-v", "0"], ["load_demo"]):
        done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    done = subprocess.run([sys.executable, "tests/support/demo_pages.py"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-1].startswith("checked ") and int(lines[-1].split()[1]) > 25, done.stdout
    assert lines[:-1] == [], done.stdout
