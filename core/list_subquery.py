"""A subquery's one column read as a list in its outer row: PostgreSQL's ARRAY(subquery) (Django's
ArraySubquery), and on SQLite (the demo) the same list from json_group_array. Lets a list page
read each row's few children in the row's own query, on both databases."""

import json

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import JSONField


class ListSubquery(ArraySubquery):
    def _column(self) -> str:
        query = self.query
        names = list(query.values_select) + list(query.annotation_select)
        if len(names) != 1:
            raise ValueError("ListSubquery reads a subquery of one column (.values('name')).")
        return names[0]

    def as_sqlite(self, compiler, connection, **extra):
        column = connection.ops.quote_name(self._column())
        # A JSON object (JSONObject) kept as one, not as a string holding it.
        value = f"json({column})" if isinstance(self.query.output_field, JSONField) else column
        return self.as_sql(
            compiler, connection,
            # The column's name from the query, quoted; no input in the text.
            template=f"(SELECT json_group_array({value}) FROM (%(subquery)s))",  # noqa: S608
            **extra,
        )

    def get_db_converters(self, connection):
        if connection.vendor == "sqlite":
            return [self._from_json]
        return super().get_db_converters(connection)

    @staticmethod
    def _from_json(value, expression, connection):
        return [] if value is None else json.loads(value)
