"""`make prod-local` for real: deploy/local/prod-local.sh starts gunicorn, a Celery worker and
beat under honcho in the production posture; a member signs in, launches a workload through the
API, the worker and beat bring it to ready on the simulated fleet, and SIGTERM to the supervisor
stops every process it started.

It runs on the test database (already migrated: the script's migrate is a no-op) with this
test's own data instead of the demo's (PROD_LOCAL_SEED=none), on free ports and the suite's
Redis database.
"""

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from tenants.models import Membership
from tests.factories import (
    TEST_PASSWORD,
    GPUFactory,
    MembershipFactory,
    NodeFactory,
    QuotaFactory,
    TenantFactory,
    UserFactory,
)
from tests.support.fixtures_celery import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "local" / "prod-local.sh"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` (from /proc), at this moment."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def member_with_quota(transactional_db):
    tenant = TenantFactory(slug="acme", name="Acme Labs")
    user = UserFactory(username="demo-member")
    # The suite hashes passwords fast; the production posture knows only its own hashers.
    user.password = PBKDF2PasswordHasher().encode(TEST_PASSWORD, PBKDF2PasswordHasher().salt())
    user.save(update_fields=["password"])
    MembershipFactory(tenant=tenant, user=user, role=Membership.Role.MEMBER)
    for resource, limit in {
        "cpu": 32,
        "memory-gib": 256,
        "storage-gib": 100,
        "count:vcluster": 2,
    }.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    node = NodeFactory(reserved_for="")
    for index in range(2):
        GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    return user


@pytest.fixture
def prod_local(member_with_quota, redis_url, tmp_path):
    port = _free_port()
    db = settings.DATABASES["default"]
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "PYTEST_", "DATABASE_URL", "CELERY_"))
    } | {
        "PROD_LOCAL_PORT": str(port),
        "PROD_LOCAL_DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "PROD_LOCAL_REDIS_URL": redis_url,
        "PROD_LOCAL_STATE": str(tmp_path / "state"),
        "PROD_LOCAL_SEED": "none",
        "PROD_LOCAL_WEB_WORKERS": "1",
        "PROD_LOCAL_WORKER_CONCURRENCY": "1",
        # Only to keep the test short: the simulated controllers and beat's look come sooner.
        "FLEET_SIMULATED_READY_SECONDS": "1",
        "WORKLOAD_OBSERVE_SECONDS": "1",
    }
    log = tmp_path / "prod-local.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(SCRIPT)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"

    def serving() -> bool:
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        try:
            return requests.get(f"{url}/readyz", timeout=2).status_code == 200
        except (requests.ConnectionError, requests.Timeout):  # not up, or still starting
            return False

    try:
        wait_until(serving, timeout=90, every=0.1)
        yield process, url, log
    finally:
        if process.poll() is None:
            for pid in _descendants(process.pid):
                os.kill(pid, signal.SIGKILL)
            process.kill()
            process.wait(timeout=10)


def sign_in(url: str, username: str) -> requests.Session:
    session = requests.Session()
    page = session.get(f"{url}/accounts/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    answer = session.post(
        f"{url}/accounts/login/",
        data={"username": username, "password": TEST_PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{url}/accounts/login/"},
        allow_redirects=False,
        timeout=10,
    )
    assert answer.status_code == 302, answer.text[:500]
    assert "sessionid" in session.cookies
    return session


def test_prod_local_serves_signs_in_launches_to_ready_and_stops_cleanly(prod_local):
    process, url, log = prod_local
    # The production posture: a host other than ALLOWED_HOSTS is refused.
    foreign_host = requests.get(f"{url}/readyz", headers={"Host": "example.com"}, timeout=5)
    assert foreign_host.status_code == 400
    session = sign_in(url, "demo-member")

    launched = session.post(
        f"{url}/api/v1/workloads/",
        json={"tenant": "acme", "kind": "vcluster", "name": "team-cluster", "spec": {}},
        headers={"X-CSRFToken": session.cookies["csrftoken"], "Referer": f"{url}/"},
        timeout=10,
    )
    assert launched.status_code == 202, launched.text[:500]
    detail = launched.json()["url"]

    def status() -> str:
        return session.get(detail, timeout=10).json()["status"]

    wait_until(lambda: status() == "ready", timeout=40, every=0.1)
    text = log.read_text(errors="replace")
    assert "beat: took the beat lock" in text
    assert "workload_reconcile_task" in text  # the worker did the work

    children = _descendants(process.pid)
    assert len(children) >= 3  # gunicorn, the worker and beat (and their own children)
    process.send_signal(signal.SIGTERM)
    # honcho answers SIGTERM by stopping every process, then exits as terminated by it.
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    stopped = log.read_text(errors="replace")
    for name in ("web", "worker", "beat"):
        assert f"{name}.1 stopped (rc=0)" in stopped, stopped[-2000:]
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in children if _alive(pid)]
