"""COPY of rows into a model's table: unnamed columns take the field's default."""

from __future__ import annotations

import datetime
import json
import random
import uuid
from collections.abc import Iterable
from typing import Any

from django.core.management.color import no_style
from django.db import connection, models
from django.utils import timezone


def _column_defaults(model: type[models.Model]) -> list[tuple[str, str, Any, bool]]:
    """(column, attname, default, is JSON) of every concrete column; `_REQUIRED` where a row
    must give the value."""
    columns = []
    for field in model._meta.concrete_fields:
        if field.has_default() and field.default is timezone.now:
            default = _NOW  # the anchor, so that the rows stay deterministic
        elif field.has_default():
            default = field.get_default()
        elif field.null:
            default = None
        elif getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            default = _NOW
        elif isinstance(field, models.CharField | models.TextField) and field.blank:
            default = ""
        else:
            default = _REQUIRED
        if isinstance(field, models.JSONField) and default is not _REQUIRED:
            default = json.dumps(default)
        columns.append((field.column, field.attname, default, isinstance(field, models.JSONField)))
    return columns


_REQUIRED = object()
_NOW = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)  # replaced by the anchor per run


def copy_rows(model: type[models.Model], rows: Iterable[dict], *, now: datetime.datetime) -> int:
    """COPY `rows` (dicts by attname; unnamed columns take the field's default) into `model`."""
    columns = _column_defaults(model)
    names = ", ".join(connection.ops.quote_name(column) for column, *_ in columns)
    count = 0
    with connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(f"COPY {connection.ops.quote_name(model._meta.db_table)} ({names}) "
                      "FROM STDIN") as copy:
            for row in rows:
                values = []
                for _column, attname, default, is_json in columns:
                    if attname in row:
                        value = row[attname]
                        if is_json and value is not None:
                            value = json.dumps(value)
                    elif default is _REQUIRED:
                        raise KeyError(f"{model.__name__}.{attname} needs a value")
                    elif default is _NOW:
                        value = now
                    else:
                        value = default
                    values.append(value)
                copy.write_row(values)
                count += 1
    return count


def reset_sequences(model_list: list[type[models.Model]]) -> None:
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), model_list):
            cursor.execute(statement)




class TableWriter:
    """What every group of tables shares: the sizes, the seeded generator, the anchor."""

    anchor: datetime.datetime
    rng: random.Random
    namespace: uuid.UUID

    def _copy(self, model, rows) -> int:
        return copy_rows(model, rows, now=self.anchor)
