"""Filter sets for the API's lists (and the pages that share them)."""

import django_filters


class FormOnceFilterSet(django_filters.FilterSet):
    """A filter set whose form class is made once per class: django-filter makes a form class,
    and a form field for each filter, on every request (half a millisecond of the node list's).
    Each request still gets a form of its own (a form copies its class's fields), so this is
    only for filter sets whose filters do not depend on the request."""

    def get_form_class(self):
        form_class = type(self).__dict__.get("_form_class")
        if form_class is None:
            form_class = super().get_form_class()
            type(self)._form_class = form_class
        return form_class
