"""The README's configuration table and .env.example list exactly the same variables."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_ONLY_SECTION = "**Test suite only**"


def _env_example() -> dict[str, str]:
    text = (ROOT / ".env.example").read_text()
    return dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", text, re.MULTILINE))


def _readme_table() -> dict[str, str]:
    """Variable -> default cell of the README's configuration table (test-only rows left out)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        if TEST_ONLY_SECTION in line:
            break
        match = re.match(r"^\| `([A-Z][A-Z0-9_]*)` \| (.*?) \|", line)
        if match:
            rows[match[1]] = match[2]
    return rows


def test_readme_table_and_env_example_name_the_same_variables():
    example, table = _env_example(), _readme_table()

    assert sorted(set(example) - set(table)) == [], "in .env.example, not in the README"
    assert sorted(set(table) - set(example)) == [], "in the README, not in .env.example"


def test_readme_defaults_agree_with_env_example_values():
    """Where the README gives one literal default and .env.example a value, they are equal."""
    example, table = _env_example(), _readme_table()
    disagree = {}
    for name, cell in table.items():
        literal = re.fullmatch(r"`([^`]*)`", cell.strip())
        if literal and example.get(name) and literal[1] != example[name]:
            disagree[name] = (literal[1], example[name])
    assert disagree == {}


def test_the_readme_lists_each_variable_once():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", section, re.MULTILINE)
    assert len(names) == len(set(names))
