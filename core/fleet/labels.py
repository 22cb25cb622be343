"""Kubernetes label selectors in their string form, for the simulated fleet's lists."""

import re
from collections.abc import Callable, Mapping

from .base import PermanentFleetError

LabelTest = Callable[[Mapping[str, str]], bool]

_SET_RE = re.compile(r"^\s*(?P<key>[^\s!=]+)\s+(?P<op>in|notin)\s+\((?P<values>[^)]*)\)\s*$")


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not inside a `key in (a,b)` value list."""
    terms, depth, current = [], 0, []
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [term.strip() for term in terms if term.strip()]


def _term_test(term: str) -> LabelTest:
    if match := _SET_RE.match(term):
        key, values = match["key"], {v.strip() for v in match["values"].split(",") if v.strip()}
        if match["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if "!=" in term:
        key, value = (part.strip() for part in term.split("!=", 1))
        return lambda labels: labels.get(key) != value
    if "=" in term:
        key, value = (part.strip() for part in term.replace("==", "=", 1).split("=", 1))
        return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        key = term[1:].strip()
        return lambda labels: key not in labels
    if re.fullmatch(r"[A-Za-z0-9./_-]+", term):
        return lambda labels: term in labels
    raise PermanentFleetError(f"unable to parse label selector term {term!r}", status=400)


def label_selector_matcher(selector: str | None) -> LabelTest:
    """A predicate over an object's labels: `a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`."""
    tests = [_term_test(term) for term in _split_terms(selector or "")]
    return lambda labels: all(test(labels) for test in tests)
