"""The layers stay honest: the import contracts in pyproject.toml, and no import dodged.

import-linter checks the layers (core, then inventory, then tenants, then billing, and the
wiring in portal/ on top, imported by nobody); that production code never imports the demo or
the benchmark; that models and selectors import no services or interfaces; that inside tenants
access is the bottom and the compositions the top; and that inside every sub-domain interfaces
sit on services, services on selectors, selectors on models. `apps.get_model` would hide an
import from all of these. HTML is written by templates: nothing marks a string safe by hand.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ("core", "portal", "tenants", "inventory", "billing", "demo", "bench", "portalctl")


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


def test_no_module_marks_html_safe_by_hand():
    """HTML is the templates' (escaped by them): at most one module may ever need
    SafeString or mark_safe, and today none does."""
    marking = re.compile(r"\b(SafeString|mark_safe)\(")
    offenders = sorted({
        str(path.relative_to(ROOT))
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if marking.search(path.read_text())
    })
    assert len(offenders) <= 1, offenders
    assert offenders == []


def test_no_module_is_longer_than_500_lines():
    long = [
        f"{path.relative_to(ROOT)}: {count}"
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts
        and (count := len(path.read_text().splitlines())) > 500
    ]
    assert long == []


def test_every_app_routes_its_api_in_api_urls():
    for app in ("core", "tenants", "inventory", "billing"):
        assert (ROOT / app / "api" / "urls.py").exists(), app
        assert not (ROOT / app / "api_urls.py").exists(), app
