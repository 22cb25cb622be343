"""The one way the portal writes CSV: cells a spreadsheet would run as a formula are defused.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return (or their full-width
forms, which spreadsheets also accept) is a formula in Excel, LibreOffice and Google Sheets:
`=HYPERLINK(...)` or `+cmd|...` in a node's serial would run on the admin's machine. Such a
cell is written with a leading `'` (OWASP's advice), which spreadsheets show as text.

Plain numbers (`-3`, `+1.5`) are left alone: they are not formulas.

The rule is reversible, so an import reads back exactly what an export wrote: a cell of
apostrophes followed by a formula character gets one more apostrophe on export
(`'=x` → `''=x`) and loses one on import (`unescape_cell`).
"""

import csv
import re
from collections.abc import Iterable, Mapping
from typing import Any

FORMULA_STARTS = "=+-@\t\r\uff1d\uff0b\uff0d\uff20"
_ESCAPED = re.compile(f"^'*[{re.escape(FORMULA_STARTS)}]")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def escape_cell(value: Any) -> Any:
    """The cell as a spreadsheet must receive it: formula-leading text behind a `'`."""
    if isinstance(value, str) and _ESCAPED.match(value) and not _NUMBER.match(value):
        return "'" + value
    return value


def unescape_cell(value: str) -> str:
    """The inverse of `escape_cell`, for importing what an export wrote."""
    if value.startswith("'") and _ESCAPED.match(value[1:]) and not _NUMBER.match(value[1:]):
        return value[1:]
    return value


class _Writer:
    def __init__(self, out, **kwargs):
        self._writer = csv.writer(out, **kwargs)

    def writerow(self, row: Iterable[Any]):
        return self._writer.writerow([escape_cell(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class _DictWriter:
    def __init__(self, out, fieldnames: Iterable[str], **kwargs):
        self.fieldnames = list(fieldnames)
        self._writer = csv.DictWriter(out, fieldnames=self.fieldnames, **kwargs)

    def writeheader(self):
        return self._writer.writeheader()

    def writerow(self, row: Mapping[str, Any]):
        return self._writer.writerow({key: escape_cell(value) for key, value in row.items()})

    def writerows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(out, **kwargs) -> _Writer:
    """Like `csv.writer`, with every cell passed through `escape_cell`."""
    return _Writer(out, **kwargs)


def dict_writer(out, fieldnames: Iterable[str], **kwargs) -> _DictWriter:
    """Like `csv.DictWriter`, with every value passed through `escape_cell`."""
    return _DictWriter(out, fieldnames, **kwargs)
