"""YAML documents the user hands over (a launch file, a kubeconfig): a mapping or an error."""

from __future__ import annotations

from typing import Any

import yaml

from .exits import CliError, Exit


def yaml_mapping(text: str, *, what: str, code: Exit) -> dict[str, Any]:
    """`text` read as a YAML mapping (empty: {}); CliError(`code`) naming `what` otherwise."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise CliError(f"{what} is not valid YAML: {exc}", code) from exc
    if not isinstance(data, dict):
        raise CliError(f"{what} must hold a mapping.", code)
    return data
