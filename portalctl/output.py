"""What commands print: a Rich table for people (the default), JSON or YAML for programs.

Data goes to stdout and nothing else does; messages, progress and errors go to stderr, so that
`portalctl … -o json | jq` always reads clean JSON.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text


class Format(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


OutputOption = Annotated[
    Format, typer.Option("--output", "-o", help="How to print the answer: table, json or yaml.",
                         case_sensitive=False),
]


def stdout() -> Console:
    # Made per call: the stream may have been swapped (tests, redirection) since import.
    wide = None if sys.stdout.isatty() else 200
    return Console(file=sys.stdout, width=wide, soft_wrap=False, highlight=False)


def stderr() -> Console:
    # Soft-wrapped: a sign-in link must stay one line to be copied (or read by a script).
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


def _cell(value: Any) -> Text:
    """A table cell: the value's text as it is (a Text, never read as Rich markup)."""
    if value is None:
        return Text("")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, dict | list):
        return Text(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    return Text(str(value))


def emit(data: Any, fmt: Format, *, columns: Sequence[str] = (), title: str = "") -> None:
    """Print `data` (a dict or a list of dicts) as `fmt`; a table shows `columns` only (all of
    a dict's keys when none are given), JSON and YAML everything."""
    if fmt is Format.json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    if fmt is Format.yaml:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        return
    console = stdout()
    caption = Text(title) if title else None
    if isinstance(data, list):
        table = Table(title=caption, show_lines=False, header_style="bold")
        for column in columns:
            table.add_column(column.upper().replace("_", " "), overflow="fold")
        for row in data:
            table.add_row(*(_cell(row.get(column)) for column in columns))
        console.print(table)
        if not data:
            stderr().print("Nothing to show.")
        return
    table = Table(title=caption, show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key in columns or list(data):
        table.add_row(Text(str(key)), _cell(data.get(key)))
    console.print(table)


def say(message: str) -> None:
    """A message for the person (stderr), printed as it is: names and the API's words may hold
    brackets, which are not Rich markup here."""
    stderr().print(message, markup=False)
