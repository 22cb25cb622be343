"""Filter sets for the API's lists (and the pages that share them)."""

import django_filters
from django.http import QueryDict


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
    only for filter sets whose filters do not depend on the request.

    An empty value of any filter means "any" (see without_blank_values)."""

    def __init__(self, data=None, *args, **kwargs):
        if data is not None:
            data = without_blank_values(data, self.base_filters)
        super().__init__(data, *args, **kwargs)

    def get_form_class(self):
        form_class = type(self).__dict__.get("_form_class")
        if form_class is None:
            form_class = super().get_form_class()
            type(self)._form_class = form_class
        return form_class
