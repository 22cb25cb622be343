"""Merging a vCluster's kubeconfig into the user's: its cluster, user and context renamed to one
name of portalctl's (`<tenant>-<workload>`), added beside the others, replacing only entries of
that same name; the file backed up first (once: a backup already there is kept, so the user's
original survives later merges) and written mode 0600 in one step. A symlinked kubeconfig is
followed: the file it points to is written, its backup and temporary file beside it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from .config import write_private
from .documents import yaml_mapping
from .exits import CliError, Exit


def kubeconfig_path() -> Path:
    """$KUBECONFIG's first file (kubectl writes new entries there too), else ~/.kube/config."""
    paths = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return Path(paths[0]).expanduser() if paths else Path.home() / ".kube" / "config"


def _entries(document: dict[str, Any], key: str, what: str) -> list[dict[str, Any]]:
    """`document[key]`: a list of mappings (missing: empty); CliError naming `what` otherwise."""
    entries = document.get(key) or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise CliError(f"{what}: its {key} must be a list of mappings.", Exit.ERROR)
    return entries


def _one(entries: list[dict[str, Any]], what: str) -> dict[str, Any]:
    if not entries:
        raise CliError(f"The vCluster's kubeconfig has no {what}.", Exit.ERROR)
    return entries[0]


def _upsert(entries: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in entries if e.get("name") != entry["name"]] + [entry]


def merge(existing: dict[str, Any], incoming: dict[str, Any], *, name: str,
          use: bool, what: str = "Your kubeconfig") -> dict[str, Any]:
    """`existing` (the file `what`) with `incoming`'s (first) cluster, user and context added
    under `name`."""
    theirs = "The vCluster's kubeconfig"
    context = _one(_entries(incoming, "contexts", theirs), "context")
    wanted = context.get("context") or {}
    if not isinstance(wanted, dict):
        raise CliError(f"{theirs}: its context must be a mapping.", Exit.ERROR)
    clusters = {c.get("name"): c for c in _entries(incoming, "clusters", theirs)}
    users = {u.get("name"): u for u in _entries(incoming, "users", theirs)}
    cluster = clusters.get(wanted.get("cluster")) or _one(list(clusters.values()), "cluster")
    user = users.get(wanted.get("user")) or _one(list(users.values()), "user")
    merged = dict(existing)
    merged.setdefault("apiVersion", "v1")
    merged.setdefault("kind", "Config")
    merged.setdefault("preferences", {})
    merged["clusters"] = _upsert(_entries(existing, "clusters", what),
                                 {"name": name, "cluster": cluster.get("cluster", {})})
    merged["users"] = _upsert(_entries(existing, "users", what),
                              {"name": name, "user": user.get("user", {})})
    context_body = {**wanted, "cluster": name, "user": name}
    merged["contexts"] = _upsert(_entries(existing, "contexts", what),
                                 {"name": name, "context": context_body})
    if use or not merged.get("current-context"):
        merged["current-context"] = name
    return merged


def _back_up(real: Path, original: bytes) -> Path:
    """The backup beside `real`: written once, private from its first byte; one already there
    is the user's earlier original and is kept."""
    backup = real.with_name(real.name + ".portalctl.bak")
    try:
        descriptor = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return backup
    except OSError as exc:
        raise CliError(f"Cannot back up {real} to {backup}: {exc}", Exit.ERROR) from exc
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(original)
    except OSError as exc:
        backup.unlink(missing_ok=True)
        raise CliError(f"Cannot back up {real} to {backup}: {exc}", Exit.ERROR) from exc
    return backup


def merge_into_file(text: str, *, name: str, use: bool,
                    path: Path | None = None) -> tuple[Path, Path | None]:
    """Merge kubeconfig `text` into the user's file; returns it and its backup (None when
    there was no file before)."""
    path = path or kubeconfig_path()
    real = path.resolve()  # a symlink stays one: its target is what gets written
    incoming = yaml_mapping(text, what="The vCluster's kubeconfig", code=Exit.ERROR)
    backup = None
    existing: dict[str, Any] = {}
    try:
        original = real.read_bytes() if real.exists() else None
        current = original.decode("utf-8") if original is not None else None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"Cannot read {path}: {exc}", Exit.ERROR) from exc
    if original is not None:
        existing = yaml_mapping(current or "", what=str(path), code=Exit.ERROR)
    merged = merge(existing, incoming, name=name, use=use, what=str(path))
    if original is not None:
        backup = _back_up(real, original)
    write_private(real, yaml.safe_dump(merged, sort_keys=False))
    return path, backup
