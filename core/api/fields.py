"""Serializer fields the API's lists share."""

from rest_framework import serializers

from ..links import url_around


class RowUrlField(serializers.HyperlinkedIdentityField):
    """An object's own API URL, its view reversed once per serialization (a list's rows share
    this field) rather than once per row."""

    def get_url(self, obj, view_name, request, format):
        if obj.pk is None:
            return None
        if format or request is None:
            return super().get_url(obj, view_name, request, format)
        if not hasattr(self, "_around"):
            self._around = url_around(view_name)
        before, after = self._around
        return request.build_absolute_uri(f"{before}{obj.pk}{after}")
