"""The data set, built once per scale and cached as a template database."""

from __future__ import annotations

import datetime
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import environ
import psycopg
from django.core.management import call_command
from django.db import connections

from . import dataset
from .options import BASE_DIR, Options


def _maintenance(database_url: str) -> psycopg.Connection:
    config = environ.Env.db_url_config(database_url)
    return psycopg.connect(
        host=config["HOST"] or None, port=config["PORT"] or None, user=config["USER"] or None,
        password=config["PASSWORD"] or None, dbname="postgres", autocommit=True,
    )


def _fingerprint(options: Options, anchor: datetime.datetime) -> str:
    """What the cached data set depends on: the seed, the month, the generator's code and
    every migration (names and contents)."""
    digest = hashlib.sha256(json.dumps([options.seed, anchor.isoformat()]).encode())
    sources = [*sorted(Path(dataset.__file__).parent.glob("*.py")),
               *sorted(BASE_DIR.glob("*/migrations/0*.py"))]
    for path in sources:
        digest.update(str(path.relative_to(BASE_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:8]


def template_name(options: Options, anchor: datetime.datetime) -> str:
    scale = f"{options.scale:g}".replace(".", "_")
    return f"{options.database_name}_s{scale}_{_fingerprint(options, anchor)}"[:63]


def _recreate(admin: psycopg.Connection, name: str, template: str | None = None) -> None:
    admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = %s AND pid <> pg_backend_pid()", [name])
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))


def prepare_data_set(options: Options, log) -> dict[str, Any]:
    """The bench database holding the data set: cloned from the cache, or built and cached."""
    name = options.database_name
    if "bench" not in name:
        raise SystemExit(f"Refusing to replace database {name!r}: its name must say 'bench'.")
    anchor = dataset.default_anchor()
    template = template_name(options, anchor)
    connections.close_all()
    started = time.perf_counter()
    with _maintenance(options.database_url) as admin:
        cached = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                               [template]).fetchone()
        if cached:
            log(f"Data set: reusing {template}.")
            _recreate(admin, name, template)
            return {"cached": True, "template": template,
                    "clone_seconds": round(time.perf_counter() - started, 2)}
        log(f"Data set: building scale {options.scale:g} (cached as {template}).")
        _recreate(admin, name)
        call_command("migrate", verbosity=0)
        migrated = time.perf_counter()
        summary = dataset.generate(scale=options.scale, seed=options.seed, anchor=anchor, log=log)
        connections.close_all()
        # Older caches of this scale (another month, generator or migration) are dropped.
        prefix = template.rsplit("_", 1)[0] + "_"
        for (stale,) in admin.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s",
                [prefix.replace("_", r"\_") + "%", template]).fetchall():
            admin.execute(f'DROP DATABASE IF EXISTS "{stale}"')
        admin.execute(f'CREATE DATABASE "{template}" TEMPLATE "{name}"')
        return {"cached": False, "template": template,
                "migrate_seconds": round(migrated - started, 2),
                "generate_seconds": summary["total_seconds"],
                "cache_seconds": round(time.perf_counter() - migrated - summary["total_seconds"],
                                       2),
                "rows": summary["rows"], "step_seconds": summary["seconds"]}

