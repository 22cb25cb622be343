"""The environment variables settings read, their declarations (portal/config_vars.py), the
reference table of docs/configuration.md and .env.example agree."""

import ast
import re
from pathlib import Path

from portal import config_reference, config_vars

ROOT = Path(__file__).resolve().parents[2]


def _env_example() -> dict[str, str]:
    text = (ROOT / ".env.example").read_text()
    return dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", text, re.MULTILINE))


def _variables_settings_read() -> list[str]:
    """Every name passed to `env(...)` or `env.<cast>(...)` in the settings module(s)."""
    files = [ROOT / "portal" / "settings.py", *sorted((ROOT / "portal" / "settings").glob("*.py"))]
    names = []
    for path in (f for f in files if f.exists()):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func, first = node.func, node.args[0]
            on_env = (isinstance(func, ast.Name) and func.id == "env") or (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "env"
            )
            if on_env:
                assert isinstance(first, ast.Constant), f"{path}:{node.lineno}: a computed name"
                names.append(first.value)
    return names


def test_every_variable_settings_read_is_declared_and_every_declared_one_is_read():
    read = _variables_settings_read()
    # The scan sees one-line and multi-line reads alike.
    assert {"SECRET_KEY", "REMEDIATION_CRITICAL_XIDS", "DATABASE_URL"} <= set(read)

    declared = config_vars.declared()
    assert sorted(set(read) - set(declared)) == [], "read in settings, not declared"
    assert sorted(set(declared) - set(read)) == [], "declared, never read in settings"


def test_each_variable_is_declared_once():
    names = [var.name for section in config_vars.SECTIONS for var in section.variables]
    assert len(names) == len(set(names))


def test_the_reference_table_and_env_example_are_what_the_declarations_write():
    """Run `python manage.py config_reference` after changing portal/config_vars.py."""
    for path, text in config_reference.written_files(ROOT).items():
        assert path.read_text() == text, f"{path.name} is stale: run manage.py config_reference"


def test_env_example_gives_each_declared_variable_its_declared_value():
    example = _env_example()
    assert list(example) == list(config_vars.declared())
    assert example["PORTAL_ENV"] == "development"
    assert example["CELERY_BROKER_URL"] == ""  # empty: the default, tasks run in-process
    assert example["SECRET_KEY"] != ""


def _settings_under(env: dict[str, str]) -> dict[str, str]:
    """Every upper-case setting, as repr, of a fresh process run with exactly `env` added."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json; from django.conf import settings as s;"
        "print(json.dumps({k: repr(getattr(s, k)) for k in dir(s) if k.isupper()}))"
    )
    keep = {"PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV"}
    base = {k: v for k, v in os.environ.items() if k in keep}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT, env=base | {"SECRET_KEY": "a-key-for-this-test"} | env,
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    return {name: re.sub(r" at 0x[0-9a-f]+", "", value) for name, value in values.items()}


def test_copying_env_example_to_env_changes_no_setting():
    """`cp .env.example .env` is the demo: every empty value means the default, and every value
    the example sets is the default, so no setting differs from running with no .env at all."""
    example = _env_example() | {"SECRET_KEY": "a-key-for-this-test"}
    # Relative to the working directory in the example, absolute by default: the same file.
    example["DATABASE_URL"] = f"sqlite:///{ROOT / 'db.sqlite3'}"
    with_example, with_nothing = _settings_under(example), _settings_under({})
    differ = {
        name: (with_example[name], with_nothing.get(name))
        for name in with_example
        if with_example[name] != with_nothing.get(name)
    }
    assert differ == {}
    assert with_example["CELERY_BROKER_URL"] == "'memory://'"
    assert with_example["CELERY_TASK_ALWAYS_EAGER"] == "True"
