"""The benchmark page's results, written by the benchmark: `python -m bench.publish
RESULTS_JSON PAGE` (the last step of `make bench`) replaces what stands between the page's
markers with the tables of RESULTS_JSON. Pure: no database, no settings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .report import render_markdown

START = "<!-- bench:results -->"
END = "<!-- /bench:results -->"


def replace_section(page: str, generated: str) -> str:
    """`page` with what stands between its markers replaced by `generated`."""
    if page.count(START) != 1 or page.count(END) != 1 or page.index(START) > page.index(END):
        raise ValueError(f"the page needs one {START} … {END} section")
    before, rest = page.split(START)
    _, after = rest.split(END)
    note = ("<!-- Written by `make bench` (bench/publish.py) from its results.json: "
            "edits here are replaced. -->")
    return f"{before}{START}\n{note}\n\n{generated.strip()}\n\n{END}{after}"


def publish(results_path: Path, page_path: Path) -> None:
    results = json.loads(results_path.read_text())
    page_path.write_text(replace_section(page_path.read_text(),
                                         render_markdown(results, level=3)))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    publish(Path(argv[0]), Path(argv[1]))
    print(f"Wrote the results of {argv[0]} into {argv[1]}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
