"""Serializer fields that give DRF's answers with less work per row of a list.

On a 50-row list of workloads, DRF inspected `get_status_display`'s signature on every row to
decide it may call it (a fifth of the serializer's time) and reversed every row's URL (a
seventh). These fields answer the same, and drf-spectacular describes them as their parents.
"""

from urllib.parse import quote

from rest_framework import serializers

# Django's reverse() leaves these characters of a URL argument as they are.
_URL_SAFE = "!$&'()*+,;=/~:@"


class MethodCharField(serializers.CharField):
    """A read-only string from a method of the object that takes no argument
    (`get_status_display`): called directly, its signature is not inspected per row."""

    def __init__(self, **kwargs) -> None:
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def get_attribute(self, instance):
        return getattr(instance, self.source)()


class PrefixHyperlinkedIdentityField(serializers.HyperlinkedIdentityField):
    """The object's URL, reversed once per request for a placeholder and filled in per row
    (DRF reverses it for every row)."""

    # Digits, so that an <int:pk> route takes it; long enough to be nowhere else in a URL.
    _PLACEHOLDER = "80917345129834756201"

    def get_url(self, obj, view_name, request, format):
        if format is not None:
            return super().get_url(obj, view_name, request, format)
        if hasattr(obj, "pk") and obj.pk in (None, ""):
            return None  # unsaved: as DRF answers
        cached = getattr(self, "_url_template", None)
        if cached is None or cached[0] is not request:
            url = self.reverse(
                view_name, kwargs={self.lookup_url_kwarg: self._PLACEHOLDER}, request=request
            )
            cached = self._url_template = (request, url)
        value = quote(str(getattr(obj, self.lookup_field)), safe=_URL_SAFE)
        return cached[1].replace(self._PLACEHOLDER, value)


# Where a Prefetch(to_attr=...) leaves a nested list for PrefetchedListSerializer.
PREFETCHED_SUFFIX = "_prefetched"


class PrefetchedListSerializer(serializers.ListSerializer):
    """A nested `many=True` list read from `<field>_prefetched`, the plain list that
    `Prefetch("<field>", to_attr="<field>_prefetched")` puts on each object, when it is there.

    Prefetching into the related manager instead costs a queryset per row: Django filters a
    clone of the Prefetch's queryset for every object to hold its rows. Objects fetched
    without that Prefetch (one just created) are read through the manager as before."""

    def get_attribute(self, instance):
        rows = instance.__dict__.get(self.field_name + PREFETCHED_SUFFIX)
        return rows if rows is not None else super().get_attribute(instance)
