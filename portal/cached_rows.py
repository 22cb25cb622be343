"""A list's rows, each written once per process for the values it was read from.

A 50-row page of the workload list API spent most of its time on what was the same as the last
request's: a model instance per row (with its JSON columns decoded) and the row's dict built
field by field; the workload list page, on its instances and each row's HTML. Here a page is
read as plain values (JSON columns as their text), and each row is kept under those values and
what else it depends on (for the API: the serializer, the timezone its datetimes are written
in, the language of its labels, the scheme, host, URL prefix and API version of its links). A
row whose values changed is a new key: its instance is built from the values already read (no
query per row) and written as before.

The rows handed out are shared between requests: nothing may change them after.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from django.contrib.postgres.fields import ArrayField
from django.db import connections, models
from django.db.models.functions import Cast
from django.urls import get_script_prefix
from django.utils import translation
from rest_framework.response import Response


class BoundedMemo(dict):
    """A dict that empties itself when it holds `limit` entries and one more is put in: a
    process's memo of values that are cheap to make again, with a bound on its memory."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key, value):
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value

    def written(self, context: tuple, items: Iterable, write: Callable,
                key: Callable | None = None) -> list:
        """`write(item)` for each of `items` (a row's values: hashable, or made so by
        `key(item)`), from the memo where the same item was written in the same `context`
        (everything else its answer depends on) before."""
        answers = []
        for item in items:
            key_of = (context, item if key is None else key(item))
            answer = self.get(key_of)
            if answer is None:
                answer = self.put(key_of, write(item))
            answers.append(answer)
        return answers


class RowValues(NamedTuple):
    """A list's queryset read as values: its concrete fields (its `only()` columns, in the
    model's order), its annotations, and the queryset of their values (JSON as its text).
    `unhashable`: the positions of annotations read as lists or mappings (an ArraySubquery of
    a row's lines, say), which a row's key holds as their JSON text."""

    fields: list[models.Field]
    annotations: list[str]
    queryset: models.QuerySet
    unhashable: tuple[int, ...] = ()

    def key(self, row_values: tuple) -> tuple:
        """The row's values as a memo's key."""
        if not self.unhashable:
            return row_values
        key = list(row_values)
        for position in self.unhashable:
            key[position] = json.dumps(key[position], sort_keys=True, default=str)
        return tuple(key)


class CachedRows:
    """The rows of a list of `model`, read as values and written once per set of values.

    `values(queryset)` reads a list's queryset (its `only()` columns and annotations) as
    values; `rows(values, page, context, write)` answers `write(instance)` for each row of the
    page, from the memo where the same values and `context` were written before.
    `response(view, queryset)` is a list API's page of the queryset, written by the view's
    serializer (a RowSerializerMixin serializer) as DRF would write its instances."""

    def __init__(self, model: type[models.Model], *, limit: int = 4000) -> None:
        self.model = model
        self.memo = BoundedMemo(limit)

    def values(self, queryset: models.QuerySet) -> RowValues:
        names, deferred = queryset.query.deferred_loading
        fields = [
            field for field in self.model._meta.concrete_fields
            # `only()` names a foreign key by its name or its column's ("rack_id").
            if field.primary_key or (field.name in names or field.attname in names) != deferred
        ]
        annotations = list(queryset.query.annotation_select)
        unhashable = tuple(
            len(fields) + position
            for position, expression in enumerate(queryset.query.annotation_select.values())
            if isinstance(expression.output_field, (models.JSONField, ArrayField))
        )
        columns = [
            Cast(field.attname, models.TextField())
            if isinstance(field, models.JSONField) else field.attname
            for field in fields
        ]
        return RowValues(fields, annotations, queryset.values_list(*columns, *annotations),
                         unhashable)

    def rows(self, values: RowValues, page: Iterable[tuple], context: tuple,
             write: Callable[[models.Model], Any]) -> list:
        """`write(instance)` of each row of `page` (rows of `values.queryset`); `context` is
        everything else the written row depends on."""
        connection = connections[values.queryset.db]
        return self.memo.written(
            context, page,
            lambda row_values: write(self._instance(values, row_values, connection)),
            key=values.key if values.unhashable else None,
        )

    def response(self, view, queryset: models.QuerySet) -> Response:
        """What `ListModelMixin.list` answers for `queryset` (filtered), through the view's
        paginator and serializer, its rows from the memo."""
        values = self.values(queryset)
        page = view.paginate_queryset(values.queryset)
        serializer = view.get_serializer(many=True).child
        tz = serializer._timezone()
        request = serializer.context.get("request")
        context = (
            type(serializer), tz, translation.get_language(), get_script_prefix(),
            getattr(request, "scheme", None),
            request.get_host() if request is not None else None,
            getattr(request, "version", None),
        )
        rows = self.rows(values, values.queryset if page is None else page, context,
                         lambda instance: serializer._row(instance, tz))
        return Response(rows) if page is None else view.get_paginated_response(rows)

    def _instance(self, values: RowValues, row_values: tuple, connection) -> models.Model:
        """The instance the list's queryset would have built of these values."""
        fields = values.fields
        loaded = [
            field.from_db_value(value, None, connection)
            if isinstance(field, models.JSONField) and value is not None else value
            for field, value in zip(fields, row_values, strict=False)
        ]
        instance = self.model.from_db(
            connection.alias, [field.attname for field in fields], loaded
        )
        for name, value in zip(values.annotations, row_values[len(fields):], strict=True):
            setattr(instance, name, value)
        return instance
