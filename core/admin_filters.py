"""Django admin list filters that stay cheap however many rows the list has."""

from django.contrib.admin.filters import AllValuesFieldListFilter, RelatedFieldListFilter
from django.db import connection


class DistinctValuesListFilter(AllValuesFieldListFilter):
    """Django's filter of the values a column holds, its values read by a loose index scan:
    one index probe per distinct value (`WITH RECURSIVE`, the next value above the last),
    instead of `SELECT DISTINCT` over every row on every page of the list. For a column of few
    values (the tenants' 17 cohorts among 2,000 tenants) with an index of its own, of a model
    whose admin lists every row (its get_queryset restricts nothing: the values are read from
    the whole table). A nullable column, or one across a relation, is read as Django reads it."""

    def __init__(self, field, request, params, model, model_admin, field_path):
        super().__init__(field, request, params, model, model_admin, field_path)
        if field.null or field.model is not model or field_path != field.name:
            return
        quote = connection.ops.quote_name
        table, column = quote(model._meta.db_table), quote(field.column)
        with connection.cursor() as cursor:
            cursor.execute(
                # Names from the model only, no input.
                f"WITH RECURSIVE v(value) AS ("  # noqa: S608
                f"SELECT MIN({column}) FROM {table} "
                f"UNION ALL SELECT (SELECT MIN({column}) FROM {table} WHERE {column} > v.value) "
                "FROM v WHERE v.value IS NOT NULL"
                ") SELECT value FROM v WHERE value IS NOT NULL"
            )
            self.lookup_choices = [value for (value,) in cursor.fetchall()]


class RelatedByNameListFilter(RelatedFieldListFilter):
    """Django's filter of a foreign key's rows, each read as its key and its `name` column (what
    the related model's __str__ shows): not whole rows, which for a tenant carry its manifests
    last applied (a JSON document each, thousands of tenants at fleet scale), on every page."""

    def field_choices(self, field, request, model_admin):
        rows = field.remote_field.model._default_manager.all()
        ordering = self.field_admin_ordering(field, request, model_admin)
        if ordering:
            rows = rows.order_by(*ordering)
        return list(rows.values_list(field.target_field.attname, "name"))
