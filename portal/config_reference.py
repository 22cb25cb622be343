"""What `python manage.py config_reference` writes from the declarations of portal/config_vars.py:
the reference table of docs/configuration.md and the whole of .env.example
(tests/portal/test_configuration.py checks both are up to date)."""

import re
import textwrap
from pathlib import Path

from .config_vars import SECTIONS

REFERENCE_BEGIN = "<!-- BEGIN the declarations' table (manage.py config_reference) -->"
REFERENCE_END = "<!-- END the declarations' table -->"
ENV_EXAMPLE_HEADER = """\
# Every environment variable the portal reads, with its default; an empty value means the default.
# Written by `python manage.py config_reference` from portal/config_vars.py: edit that, not this.
# A development checkout reads .env (written by `make demo`); production reads the real environment.
"""


def reference_table() -> str:
    """The Markdown table docs/configuration.md shows between its markers."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for section in SECTIONS:
        lines.append(f"| **{section.title}**{' ' + section.note if section.note else ''} | | |")
        lines += [f"| `{v.name}` | {v.default_cell} | {v.meaning} |" for v in section.variables]
    return "\n".join(lines) + "\n"


def _plain(markdown: str) -> str:
    """Markdown as a comment reads it: links as their text, no backticks."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    return text.replace("`", "")


def env_example() -> str:
    """The whole of .env.example."""
    out = [ENV_EXAMPLE_HEADER]
    for section in SECTIONS:
        title = f"# --- {section.title} "
        out.append(f"\n{title}{'-' * max(3, 99 - len(title))}\n")
        if section.note:
            out += [f"# {line}\n" for line in textwrap.wrap(_plain(section.note), 97)]
        for var in section.variables:
            comment = _plain(var.meaning)
            if var.shown and not var.example:
                comment += f" (default: {_plain(var.shown)})"
            out += [f"# {line}\n" for line in textwrap.wrap(comment, 97, break_on_hyphens=False)]
            value = var.default if var.example is None else var.example
            out.append(f"{var.name}={value}\n")
    return "".join(out)


def written_files(root: Path) -> dict[Path, str]:
    """What config_reference writes: each file's whole text, from the declarations."""
    page = root / "docs" / "configuration.md"
    before, rest = page.read_text().split(REFERENCE_BEGIN, 1)
    after = rest.split(REFERENCE_END, 1)[1]
    return {
        page: f"{before}{REFERENCE_BEGIN}\n{reference_table()}{REFERENCE_END}{after}",
        root / ".env.example": env_example(),
    }
