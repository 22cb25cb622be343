"""Filter sets for the API's lists (and the pages that share them)."""

import django_filters
from django.core.validators import DecimalValidator, MaxValueValidator, MinValueValidator
from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations
from django.http import QueryDict
from django_filters.utils import get_model_field

# The range of each integer column type (PostgreSQL's, the widest any backend enforces). A
# number filter on an integer column takes only whole numbers in its column's range: anything
# else is the form's error (400), on every database alike (SQLite would fail on a number past
# 64 bits with OverflowError, a 500; PostgreSQL would answer an empty list).
INTEGER_RANGES = BaseDatabaseOperations.integer_field_ranges


def _integer_column(model: type[models.Model], field_name: str) -> str | None:
    """The integer column type `field_name` (a path, a foreign key's id) ends in, if any."""
    field = get_model_field(model, field_name)
    while field is not None and field.is_relation:
        field = getattr(field, "target_field", None)
    internal_type = field.get_internal_type() if field is not None else None
    return internal_type if internal_type in INTEGER_RANGES else None


def _bound_integer_filters(filterset: type[django_filters.FilterSet], form_class) -> None:
    model = filterset._meta.model
    for name, filter_ in filterset.base_filters.items():
        form_field = form_class.base_fields.get(name)
        if (model is None or filter_.method is not None or form_field is None
                or not isinstance(filter_, django_filters.NumberFilter)):
            continue
        column = _integer_column(model, filter_.field_name)
        if column is None:
            continue
        low, high = INTEGER_RANGES[column]
        form_field.validators = [
            *form_field.validators, DecimalValidator(None, 0), MinValueValidator(low),
            MaxValueValidator(high),
        ]
        form_field.widget.attrs["step"] = "1"


def without_blank_values(data, names) -> QueryDict:
    """The query without the empty values of the filters `names`: a browser sends a select's
    "any" choice, or an empty input, as `name=`, and that means "any" on every filter (a
    multiple-choice filter would otherwise refuse "" as no valid choice)."""
    if isinstance(data, QueryDict):
        lists = data.lists()
    else:
        lists = ((k, v if isinstance(v, list | tuple) else [v]) for k, v in data.items())
    kept = QueryDict(mutable=True)
    for name, values in lists:
        if name in names:
            values = [v for v in values if not (isinstance(v, str) and not v.strip())]
        if values:
            kept.setlist(name, values)
    kept._mutable = False
    return kept


class FormOnceFilterSet(django_filters.FilterSet):
    """A filter set whose form class is made once per class: django-filter makes a form class,
    and a form field for each filter, on every request (half a millisecond of the node list's).
    Each request still gets a form of its own (a form copies its class's fields), so this is
    only for filter sets whose filters do not depend on the request. Its number filters on
    integer columns take whole numbers in the column's range only (INTEGER_RANGES).

    An empty value of any filter means "any" (see without_blank_values)."""

    def __init__(self, data=None, *args, **kwargs):
        if data is not None:
            data = without_blank_values(data, self.base_filters)
        super().__init__(data, *args, **kwargs)

    def get_form_class(self):
        form_class = type(self).__dict__.get("_form_class")
        if form_class is None:
            form_class = super().get_form_class()
            _bound_integer_filters(type(self), form_class)
            type(self)._form_class = form_class
        return form_class
