"""The layers stay honest: the import contracts in pyproject.toml, and no import dodged.

import-linter checks that portal's infrastructure imports no app; that models and selectors
import no services or interfaces; that the inventory reaches tenants only through
tenants.access; and that inside every sub-domain interfaces sit on services, services on
selectors, selectors on models. `apps.get_model` would hide an import from all of these.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ("portal", "tenants", "inventory", "billing")


def test_the_import_contracts_are_kept():
    command = "import sys; from importlinter.cli import lint_imports_command; " \
        "sys.exit(lint_imports_command())"
    result = subprocess.run(
        [sys.executable, "-c", command, "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "BROKEN" not in report
    assert re.search(r"Contracts: \d+ kept, 0 broken", report), report


def test_no_code_dodges_the_import_graph_with_apps_get_model():
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "apps.get_model(" in line
    ]
    assert offenders == []


def test_every_app_routes_its_api_in_api_urls():
    for app in APPS:
        assert (ROOT / app / "api" / "urls.py").exists(), app
        assert not (ROOT / app / "api_urls.py").exists(), app
