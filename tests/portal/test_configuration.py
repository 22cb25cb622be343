"""docs/configuration.md's table and .env.example list exactly the same variables."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_ONLY_SECTION = "**Test suite only**"


def _env_example() -> dict[str, str]:
    text = (ROOT / ".env.example").read_text()
    return dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", text, re.MULTILINE))


def _configuration_table() -> dict[str, str]:
    """Variable -> default cell of docs/configuration.md's table (test-only rows left out)."""
    section = (ROOT / "docs" / "configuration.md").read_text()
    rows: dict[str, str] = {}
    for line in section.splitlines():
        if TEST_ONLY_SECTION in line:
            break
        match = re.match(r"^\| `([A-Z][A-Z0-9_]*)` \| (.*?) \|", line)
        if match:
            rows[match[1]] = match[2]
    return rows


def test_configuration_table_and_env_example_name_the_same_variables():
    example, table = _env_example(), _configuration_table()

    assert sorted(set(example) - set(table)) == [], "only in .env.example"
    assert sorted(set(table) - set(example)) == [], "only in docs/configuration.md"


def test_configuration_page_defaults_agree_with_env_example_values():
    """Where the configuration page gives one literal default and .env.example a value, they
    are equal."""
    example, table = _env_example(), _configuration_table()
    disagree = {}
    for name, cell in table.items():
        literal = re.fullmatch(r"`([^`]*)`", cell.strip())
        if literal and example.get(name) and literal[1] != example[name]:
            disagree[name] = (literal[1], example[name])
    assert disagree == {}


def test_the_configuration_page_lists_each_variable_once():
    section = (ROOT / "docs" / "configuration.md").read_text()
    names = re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", section, re.MULTILINE)
    assert len(names) == len(set(names))


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
