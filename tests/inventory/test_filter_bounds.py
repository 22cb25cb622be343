"""A number filter on an integer column takes whole numbers in the column's range: a value past
it (or a fraction) is the form's 400 naming the filter, in the page and the API, on PostgreSQL
and on SQLite (the demo's database, where a number past 64 bits used to be a 500)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import NodeFactory

ROOT = Path(__file__).resolve().parents[2]
HUGE = "99999999999999999999"


@pytest.fixture
def node(db):
    return NodeFactory(hostname="gpu-a", k8s_name="gpu-a")


@pytest.mark.django_db
@pytest.mark.parametrize("value", [HUGE, f"-{HUGE}", "1e30", "9223372036854775808", "1.5"])
def test_a_rack_filter_past_its_column_is_a_400_in_the_api_and_the_page(
    login, platform_admin, node, value
):
    client = login(platform_admin)
    api = client.get("/api/v1/nodes/", {"rack": value})
    page = client.get("/fleet/nodes/", {"rack": value})

    assert api.status_code == 400, api.content[:300]
    assert "rack" in api.json()["error"]["fields"]
    assert page.status_code == 400
    assert "gpu-a" not in page.content.decode()


@pytest.mark.django_db
def test_a_rack_filter_in_range_still_filters(login, platform_admin, node):
    client = login(platform_admin)
    mine = client.get("/api/v1/nodes/", {"rack": node.rack_id}).json()
    largest = client.get("/api/v1/nodes/", {"rack": "9223372036854775807"})

    assert [row["hostname"] for row in mine["results"]] == ["gpu-a"]
    assert largest.status_code == 200 and largest.json()["results"] == []


def test_on_sqlite_too(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST", "DATABASE_URL"))}
    env |= {"DATABASE_URL": f"sqlite:///{tmp_path / 'bounds.sqlite3'}",
            "ALLOW_SQLITE_TESTS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider",
         "--no-migrations", __file__, "-k", "not on_sqlite"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "6 passed" in done.stdout, done.stdout[-500:]
