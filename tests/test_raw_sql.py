"""Raw SQL only where a PostgreSQL feature needs it (docs/architecture.md, "Raw SQL"): the
modules allowed a cursor are listed here with the feature, none uses `RawSQL` or `.raw(`, and
none types a model's table name into its SQL (they take it from `Model._meta.db_table`)."""

import re
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent
APPS = ("billing", "inventory", "tenants", "portal", "core", "demo")
SKIPPED = ("migrations", "bench")

# module → the PostgreSQL feature its statement needs (each tested against the ORM or Python
# definition of the same rule where it computes one).
CURSOR_ALLOWED = {
    "billing/services/rates.py": "advisory lock",
    "billing/services/metering.py": "COPY",
    "billing/services/metering_allocated_sql.py": "INSERT ... SELECT over jsonb_each",
    "billing/services/invoicing_drafts.py": "date_bin, FILTER sums; executemany",
    "billing/selectors/explorer/usage.py": "sums over Django's own subqueries",
    "billing/selectors/explorer/utilization.py": "sums over Django's own subqueries",
    "core/admin_filters.py": "WITH RECURSIVE",
    "core/stamps.py": "the table stamps' triggers",
    "core/ops.py": "SELECT 1 (readiness)",
    "portal/views.py": "SELECT 1 (readiness)",
}
# The stamps are core infrastructure (no app imported): they name the watched tables.
NAMES_ALLOWED = {"core/stamps.py"}


def _modules():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if not any(part in SKIPPED for part in path.relative_to(ROOT).parts):
                yield path.relative_to(ROOT).as_posix(), path.read_text()


def test_only_the_listed_modules_open_a_cursor_and_none_writes_rawsql():
    cursors = {name for name, text in _modules() if "connection.cursor()" in text}
    assert cursors <= set(CURSOR_ALLOWED), sorted(cursors - set(CURSOR_ALLOWED))
    raw = [name for name, text in _modules()
           if re.search(r"\bRawSQL\(|\.raw\(|\.extra\(", text)]
    assert raw == []


def test_no_table_name_is_typed_into_sql():
    # Only these modules hold SQL text (the test above): their tables come from the models.
    tables = {model._meta.db_table for model in apps.get_models()}
    typed = {
        name: sorted(t for t in tables if re.search(rf"\b{re.escape(t)}\b", text))
        for name, text in _modules() if name in CURSOR_ALLOWED and name not in NAMES_ALLOWED
    }
    assert {name: found for name, found in typed.items() if found} == {}
