"""A list API's rows, each written once per process for the values it was read from.

A 50-row page of the workload list spent most of its time on what was the same as the last
request's: a model instance per row (with its JSON columns decoded) and the row's dict built
field by field. Here the page is read as plain values (JSON columns as their text), and each
row's dict is kept under those values and what else a row's answer depends on (the serializer,
the timezone its datetimes are written in, the language of its labels, the scheme, host, URL
prefix and API version of its links). A row whose values changed is a new key: its instance is
built from the values already read (no query per row) and written by the serializer as before.

The rows handed out are shared between requests: nothing may change them after.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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


class CachedRows:
    """The rows of `model`'s list API, read as values and written once per set of values.

    `response(view, queryset)` answers a list view's page of the queryset (its `only()`
    columns and annotations) as the view's serializer would write its instances."""

    def __init__(self, model: type[models.Model], *, limit: int = 4000) -> None:
        self.model = model
        self.rows = BoundedMemo(limit)

    def response(self, view, queryset: models.QuerySet) -> Response:
        """What `ListModelMixin.list` answers for `queryset` (filtered), through the view's
        paginator and serializer (a RowSerializerMixin serializer), its rows from here."""
        fields, annotations, values = self._values(queryset)
        page = view.paginate_queryset(values)
        serializer = view.get_serializer(many=True).child
        rows = self._represent(values if page is None else page, fields, annotations,
                               serializer, connections[queryset.db])
        return Response(rows) if page is None else view.get_paginated_response(rows)

    def _values(self, queryset: models.QuerySet):
        """The queryset's concrete fields (its `only()` columns), its annotations, and the
        queryset of their values (JSON columns as their text)."""
        names, deferred = queryset.query.deferred_loading
        fields = [
            field for field in self.model._meta.concrete_fields
            if field.primary_key or (field.name in names) != deferred
        ]
        annotations = list(queryset.query.annotation_select)
        columns = [
            Cast(field.attname, models.TextField())
            if isinstance(field, models.JSONField) else field.attname
            for field in fields
        ]
        return fields, annotations, queryset.values_list(*columns, *annotations)

    def _represent(self, values: Iterable[tuple], fields, annotations, serializer,
                   connection) -> list[dict[str, Any]]:
        tz = serializer._timezone()
        request = serializer.context.get("request")
        context = (
            type(serializer), tz, translation.get_language(), get_script_prefix(),
            getattr(request, "scheme", None),
            request.get_host() if request is not None else None,
            getattr(request, "version", None),
        )
        rows = []
        for row_values in values:
            key = (context, row_values)
            row = self.rows.get(key)
            if row is None:
                instance = self._instance(fields, annotations, row_values, connection)
                row = self.rows.put(key, serializer._row(instance, tz))
            rows.append(row)
        return rows

    def _instance(self, fields, annotations, row_values: tuple, connection) -> models.Model:
        """The instance the list's queryset would have built of these values."""
        loaded = [
            field.from_db_value(value, None, connection)
            if isinstance(field, models.JSONField) and value is not None else value
            for field, value in zip(fields, row_values, strict=False)
        ]
        instance = self.model.from_db(
            connection.alias, [field.attname for field in fields], loaded
        )
        for name, value in zip(annotations, row_values[len(fields):], strict=True):
            setattr(instance, name, value)
        return instance

