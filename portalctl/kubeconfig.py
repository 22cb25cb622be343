"""Merging a vCluster's kubeconfig into the user's: its cluster, user and context renamed to one
name of portalctl's (`<tenant>-<workload>`), added beside the others, replacing only entries of
that same name; the file backed up first and written mode 0600 in one step."""

from __future__ import annotations

import os
import shutil
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


def _one(entries: Any, what: str) -> dict[str, Any]:
    if not isinstance(entries, list) or not entries or not isinstance(entries[0], dict):
        raise CliError(f"The vCluster's kubeconfig has no {what}.", Exit.ERROR)
    return entries[0]


def _upsert(entries: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in entries if e.get("name") != entry["name"]] + [entry]


def merge(existing: dict[str, Any], incoming: dict[str, Any], *, name: str,
          use: bool) -> dict[str, Any]:
    """`existing` with `incoming`'s (first) cluster, user and context added under `name`."""
    context = _one(incoming.get("contexts"), "context")
    wanted = context.get("context") or {}
    clusters = {c.get("name"): c for c in incoming.get("clusters") or [] if isinstance(c, dict)}
    users = {u.get("name"): u for u in incoming.get("users") or [] if isinstance(u, dict)}
    cluster = clusters.get(wanted.get("cluster")) or _one(incoming.get("clusters"), "cluster")
    user = users.get(wanted.get("user")) or _one(incoming.get("users"), "user")
    merged = dict(existing)
    merged.setdefault("apiVersion", "v1")
    merged.setdefault("kind", "Config")
    merged.setdefault("preferences", {})
    merged["clusters"] = _upsert(list(existing.get("clusters") or []),
                                 {"name": name, "cluster": cluster.get("cluster", {})})
    merged["users"] = _upsert(list(existing.get("users") or []),
                              {"name": name, "user": user.get("user", {})})
    context_body = {**wanted, "cluster": name, "user": name}
    merged["contexts"] = _upsert(list(existing.get("contexts") or []),
                                 {"name": name, "context": context_body})
    if use or not merged.get("current-context"):
        merged["current-context"] = name
    return merged


def merge_into_file(text: str, *, name: str, use: bool,
                    path: Path | None = None) -> tuple[Path, Path | None]:
    """Merge kubeconfig `text` into the user's file; returns it and its backup (None when
    there was no file before)."""
    path = path or kubeconfig_path()
    incoming = yaml_mapping(text, what="The vCluster's kubeconfig", code=Exit.ERROR)
    backup = None
    existing: dict[str, Any] = {}
    if path.exists():
        existing = yaml_mapping(path.read_text(encoding="utf-8"), what=str(path),
                                code=Exit.ERROR)
        backup = path.with_name(path.name + ".portalctl.bak")
        shutil.copy2(path, backup)
        os.chmod(backup, 0o600)
    merged = merge(existing, incoming, name=name, use=use)
    write_private(path, yaml.safe_dump(merged, sort_keys=False))
    return path, backup
