"""Inventory import and export formats: NetBox-style CSV (one object type per file) and JSON.

Pure functions: text in, rows (dicts of strings with their line numbers) out, and back; and
the per-row results an import reports. The
columns follow NetBox's device, inventory-item and interface imports where a field exists
there (`name`, `site`, `rack`, `position`, `u_height`, `serial`, `status`, `tenant`, `device`,
`type`, `mac_address`), plus the fields a GPU fleet needs (`bios_profile`, `uuid`, `ib_guid`,
`rail`, `numa_node`, …). `status` is exported, and ignored on import: the lifecycle owns it.
Cells that would be spreadsheet formulas are exported behind a `'` and read back without it
(`core.csv_export`), so an export imports unchanged.
"""

import csv
import io
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from core import csv_export
from core.csv_export import unescape_cell

from .identifiers import InvalidIdentifier

NODE_COLUMNS = (
    "name", "k8s_name", "serial", "site", "rack", "position", "u_height", "role", "status",
    "bmc_address", "bios_profile", "tenant", "cpu_cores", "memory_gib",
)
GPU_COLUMNS = (
    "device", "index", "model", "uuid", "serial", "memory_gib", "pci_bus_id", "mig_capable",
    "mig_layout", "ecc_enabled", "numa_node", "nvlink_domain", "health",
)
NIC_COLUMNS = (
    "device", "name", "type", "mac_address", "ib_guid", "speed_gbps", "fabric", "numa_node",
    "rail",
)
COLUMNS = {"nodes": NODE_COLUMNS, "gpus": GPU_COLUMNS, "nics": NIC_COLUMNS}
REQUIRED = {"nodes": ("name",), "gpus": ("device", "index", "model"), "nics": ("device", "name")}
EXPORT_ONLY = {"status", "health"}


class FormatError(ValueError):
    """The file as a whole cannot be read (not CSV/JSON, unknown or missing columns)."""


@dataclass(frozen=True)
class Row:
    """One record to import: what it is, where it came from, its raw string values."""

    objects: str  # nodes | gpus | nics
    line: int  # CSV line, or the record's position in the JSON document
    values: dict[str, str]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ";".join(str(v) for v in value)
    return str(value).strip()


def parse_csv(text: str, *, objects: str) -> list[Row]:
    if objects not in COLUMNS:
        raise FormatError(f"Unknown object type {objects!r}: nodes, gpus or nics.")
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = [h.strip() for h in reader.fieldnames or []]
    if not header:
        raise FormatError("The CSV has no header row.")
    unknown = [h for h in header if h not in COLUMNS[objects]]
    if unknown:
        raise FormatError(f"Unknown column(s) for {objects}: {', '.join(unknown)}.")
    missing = [h for h in REQUIRED[objects] if h not in header]
    if missing:
        raise FormatError(f"Missing column(s) for {objects}: {', '.join(missing)}.")
    rows = []
    try:
        for raw in reader:
            values = {k.strip(): unescape_cell(_cell(v)) for k, v in raw.items() if k}
            if None in raw:
                values["__extra__"] = "too many cells"
            if any(values.values()):
                rows.append(Row(objects, reader.line_num, values))
    except csv.Error as exc:
        raise FormatError(f"Line {reader.line_num}: {exc}") from exc
    return rows


def parse_json(text: str) -> list[Row]:
    """`{"nodes": [{…, "gpus": […], "nics": […]}]}` (or the list alone) → rows of all types."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise FormatError(f"Not JSON: {exc}") from exc
    except RecursionError as exc:
        raise FormatError("Not an inventory: the JSON is nested too deeply.") from exc
    nodes = document.get("nodes") if isinstance(document, dict) else document
    if not isinstance(nodes, list):
        raise FormatError('Expected {"nodes": [...]} or a list of nodes.')
    rows: list[Row] = []
    for position, node in enumerate(nodes, start=1):
        if not isinstance(node, dict):
            rows.append(Row("nodes", position, {"__extra__": "a node must be an object"}))
            continue
        problems = _json_problems(node, NODE_COLUMNS, children=("gpus", "nics"))
        values = {k: _cell(node.get(k)) for k in NODE_COLUMNS if k in node}
        for kind in ("gpus", "nics"):
            items = node.get(kind)
            if items is not None and (
                not isinstance(items, list) or not all(isinstance(i, dict) for i in items)
            ):
                problems.append(f"{kind}: expected a list of objects")
        if problems:
            values["__extra__"] = "; ".join(problems)
        rows.append(Row("nodes", position, values))
        for kind, columns in (("gpus", GPU_COLUMNS), ("nics", NIC_COLUMNS)):
            items = node.get(kind)
            if not isinstance(items, list):
                continue
            for item in items:
                if not isinstance(item, dict):
                    continue
                child = {k: _cell(item.get(k)) for k in columns if k in item and k != "device"}
                child["device"] = values.get("name", "")
                extra = _json_problems(item, columns)
                if extra:
                    child["__extra__"] = "; ".join(extra)
                rows.append(Row(kind, position, child))
    return rows


def _json_problems(record: dict, columns: tuple[str, ...], children: tuple[str, ...] = ()
                   ) -> list[str]:
    """Unknown fields, and values that are objects or lists where a single value belongs."""
    problems = []
    unknown = sorted(set(record) - set(columns) - set(children))
    if unknown:
        problems.append(f"unknown field(s): {', '.join(unknown)}")
    for key in columns:
        value = record.get(key)
        if isinstance(value, dict) or (isinstance(value, list) and key != "mig_layout"):
            problems.append(f"{key}: expected a single value, not {type(value).__name__}")
    return problems


def render_csv(records: Iterable[dict[str, Any]], *, objects: str) -> str:
    out = io.StringIO()
    writer = csv_export.dict_writer(out, fieldnames=COLUMNS[objects], lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: _cell(record.get(k)) for k in COLUMNS[objects]})
    return out.getvalue()


def render_json(nodes: Iterable[dict[str, Any]]) -> str:
    return json.dumps({"nodes": list(nodes)}, indent=2, default=str) + "\n"


# --- checking rows: results, and the value parsers that report into them ----------


@dataclass
class RowResult:
    """What importing one row would do (or did), or why it cannot."""

    objects: str
    line: int
    key: str
    action: str = "unchanged"  # create | update | unchanged | error
    changes: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    """Every row's result, and errors about the file as a whole; `ok` only if none at all."""

    rows: list[RowResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # about the file as a whole
    dry_run: bool = True
    applied: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors and not any(r.errors for r in self.rows)

    @property
    def error_rows(self) -> list[RowResult]:
        return [r for r in self.rows if r.errors]

    def count(self, action: str) -> int:
        return sum(1 for r in self.rows if r.action == action and not r.errors)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "dry_run": self.dry_run,
            "applied": self.applied,
            "errors": self.errors,
            "summary": {a: self.count(a) for a in ("create", "update", "unchanged")},
            "rows": [r.__dict__ for r in self.rows],
        }


def parse_int(values: dict, key: str, errors: list[str], *, required: bool = False) -> int | None:
    raw = values.get(key, "")
    if raw == "":
        if required:
            errors.append(f"{key}: required")
        return None
    try:
        number = int(raw)
    except ValueError:
        errors.append(f"{key}: {raw!r} is not a whole number")
        return None
    if number < 0:
        errors.append(f"{key}: must not be negative")
    return number


def parse_bool(values: dict, key: str, errors: list[str]) -> bool | None:
    raw = values.get(key, "").lower()
    if raw == "":
        return None
    if raw in ("true", "yes", "1"):
        return True
    if raw in ("false", "no", "0"):
        return False
    errors.append(f"{key}: {raw!r} is not true or false")
    return None


def parse_identifier(
    values: dict, key: str, normalize: Callable[[str], str], errors: list[str]
) -> str | None:
    raw = values.get(key, "")
    if not raw:
        return None
    try:
        return normalize(raw)
    except InvalidIdentifier as exc:
        errors.append(f"{key}: {exc}")
        return None
