"""Serializer fields that give DRF's answers with less work per row of a list.

On a 50-row list of workloads, DRF inspected `get_status_display`'s signature on every row to
decide it may call it (a fifth of the serializer's time) and reversed every row's URL (a
seventh). These fields answer the same, and drf-spectacular describes them as their parents.
"""

import datetime
import threading
from collections.abc import Mapping
from urllib.parse import quote

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.encoding import force_str
from django.utils.hashable import make_hashable
from rest_framework import ISO_8601, serializers
from rest_framework.fields import SkipField, _UnvalidatedField
from rest_framework.relations import PKOnlyObject
from rest_framework.settings import api_settings
from rest_framework.utils.serializer_helpers import BindingDict

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


class ChoiceLabelField(serializers.CharField):
    """A read-only model field's choice label, as `get_<field>_display()` gives it, from a
    table of the field's choices made once per serializer (Django makes one per call).

    `source` names a field with choices of the serializer's model."""

    def __init__(self, **kwargs) -> None:
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def bind(self, field_name, parent) -> None:
        super().bind(field_name, parent)
        model_field = parent.Meta.model._meta.get_field(self.source)
        self._attname = model_field.attname
        self._labels = dict(make_hashable(model_field.flatchoices))

    def get_attribute(self, instance):
        value = getattr(instance, self._attname)
        try:
            label = self._labels.get(value, value)
        except TypeError:  # unhashable
            label = self._labels.get(make_hashable(value), value)
        return force_str(label, strings_only=True)


class JoinedCharField(serializers.CharField):
    """A read-only string along `source` (`tenant.slug`), read from the annotation `joined`
    (`tenant_slug`) where a list annotated it: its rows then need no related object each
    (Django builds a model instance per row for each `select_related`). An object without
    the annotation (one just created) is read along `source`."""

    def __init__(self, *, joined: str, **kwargs) -> None:
        self.joined = joined
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def get_attribute(self, instance):
        try:
            return instance.__dict__[self.joined]
        except (KeyError, AttributeError):
            return super().get_attribute(instance)


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


# Where a Prefetch(to_attr=...) (or an annotation) leaves a nested list for
# PrefetchedListSerializer.
PREFETCHED_SUFFIX = "_prefetched"


class PrefetchedListSerializer(serializers.ListSerializer):
    """A nested `many=True` list read from `<field>_prefetched`, the plain list that
    `Prefetch("<field>", to_attr="<field>_prefetched")` puts on each object, or an annotation
    of that name (an ArraySubquery of the rows as mappings), when it is there.

    Prefetching into the related manager instead costs a queryset per row: Django filters a
    clone of the Prefetch's queryset for every object to hold its rows. Objects fetched
    without either (one just created) are read through the manager as before."""

    def get_attribute(self, instance):
        rows = instance.__dict__.get(self.field_name + PREFETCHED_SUFFIX)
        return rows if rows is not None else super().get_attribute(instance)


# Whether a type is a Mapping (read by key, as DRF does), kept per type: an ABC's isinstance is
# slow enough to count on a list's every field.
_IS_MAPPING: dict[type, bool] = {}


class _Slow(Exception):
    """The quick read of an attribute met something only DRF's own reading answers right."""


def _reads_plainly(field: serializers.Field) -> bool:
    """Whether the field reads its value with DRF's plain `Field.get_attribute`."""
    return type(field).get_attribute is serializers.Field.get_attribute


def _iso_datetime(field: serializers.Field):
    """A DateTimeField's `to_representation` for aware datetimes in the ISO 8601 format, with
    the timezone looked up once per list (DRF looks it up for every value); anything else is
    DRF's."""
    if (
        type(field) is not serializers.DateTimeField
        or hasattr(field, "timezone")
        or str(getattr(field, "format", api_settings.DATETIME_FORMAT)).lower() != ISO_8601
    ):
        return None
    drf = field.to_representation

    def represent(value, tz):
        if tz is None or type(value) is not datetime.datetime or value.utcoffset() is None:
            return drf(value)
        try:
            text = value.astimezone(tz).isoformat()
        except OverflowError:
            return drf(value)  # DRF's error
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return represent


class _RowFields:
    """A row serializer's fields and the plan of its rows, bound to one serializer at a time."""

    __slots__ = ("dates", "fields", "owner", "plan")

    def __init__(self, fields: BindingDict, owner) -> None:
        self.fields, self.owner, self.plan, self.dates = fields, owner, None, False

    def bind(self, owner) -> None:
        """Hand the fields to `owner`: a field finds its request through its parent."""
        for field in self.fields.values():
            field.parent = owner
        self.fields.serializer = self.owner = owner


class _RowFieldsByClass(threading.local):
    """Per thread: a serializer's fields are bound to it, so two threads never share them."""

    def __init__(self) -> None:
        self.by_class: dict[type, _RowFields] = {}


_ROW_FIELDS = _RowFieldsByClass()


def _same(value):
    return value


def _plain_represent(field: serializers.Field):
    """A callable that answers as `field.to_representation` for a value that is not None, for
    DRF's fields whose answer is a builtin's (CharField's is `str(value)`, IntegerField's
    `int(value)`) or a dict or list of such: no method call per value, and a dict or a list
    without a call per item. None for any other field."""
    represent = type(field).to_representation
    if represent is serializers.CharField.to_representation:
        return str
    if represent is serializers.IntegerField.to_representation:
        return int
    if represent is serializers.FloatField.to_representation:
        return float
    if represent is _UnvalidatedField.to_representation:
        return _same
    if represent is serializers.BooleanField.to_representation:
        drf = field.to_representation

        def boolean(value):
            return value if type(value) is bool else drf(value)

        return boolean
    if represent is serializers.ChoiceField.to_representation:
        drf, table = field.to_representation, field.choice_strings_to_values

        def choice(value):
            return table.get(value, value) if type(value) is str and value else drf(value)

        return choice
    if represent in (serializers.DictField.to_representation,
                     serializers.ListField.to_representation):
        child = _plain_represent(field.child)
        if child is None:
            return None
        if represent is serializers.ListField.to_representation:
            if child is _same:
                return list
            return lambda data: [child(item) if item is not None else None for item in data]
        if child is _same:
            return lambda value: {str(key): val for key, val in value.items()}
        return lambda value: {
            str(key): child(val) if val is not None else None for key, val in value.items()
        }
    return None


def _row_represent(field: serializers.Field):
    """`represent(value, tz)` for a nested row serializer (`many=True` or not) that writes its
    rows with RowSerializerMixin's, handed the timezone its parent's row looked up; None for
    any other field."""
    if isinstance(field, serializers.ListSerializer):
        child = field.child
        if (
            type(field).to_representation is not serializers.ListSerializer.to_representation
            or type(child).to_representation is not RowSerializerMixin.to_representation
        ):
            return None
        row = child._row

        def rows(data, tz):
            iterable = data.all() if isinstance(data, models.manager.BaseManager) else data
            return [row(item, tz) for item in iterable]

        return rows
    if type(field).to_representation is RowSerializerMixin.to_representation:
        return field._row
    return None


class RowListSerializer(serializers.ListSerializer):
    """A row serializer's `many=True` list: the timezone its rows' datetimes are written in
    looked up once for the list, not once per row."""

    def to_representation(self, data):
        child = self.child
        iterable = data.all() if isinstance(data, models.manager.BaseManager) else data
        if type(child).to_representation is not RowSerializerMixin.to_representation:
            return [child.to_representation(item) for item in iterable]
        tz = child._timezone()
        row = child._row
        return [row(item, tz) for item in iterable]


# A serializer's `to_representation` that answers exactly what DRF's answers, with less of its
# work per row: the readable fields are listed once per serializer, not iterated through a
# generator per row; a field's source path is read with getattr (DRF inspects every value's
# signature to see whether to call it); DRF's plain fields are answered by builtins
# (`_plain_represent`), nested row serializers by their rows directly; datetimes look the
# timezone up once per list (or row). Anything unusual (a callable on the path, a missing
# attribute, a field with its own way of reading) is left to DRF's own `get_attribute`, so
# defaults, `allow_null` and skipped fields behave as DRF's. For the serializers of long
# lists; put it first among the bases. Its `many=True` list is a RowListSerializer unless its
# Meta names another.
# Its fields are built once per thread and class, not per serializer: DRF builds them for every
# request (a ModelSerializer reads its model's fields and deep-copies the declared ones, about
# 1 ms for a workload's), and they hold nothing of a request but their parent, which is moved
# to the serializer using them. A serializer given data to validate builds its own.
# (No docstring: drf-spectacular would describe every serializer that uses it with it.)
class RowSerializerMixin:
    @classmethod
    def many_init(cls, *args, **kwargs):
        serializer = super().many_init(*args, **kwargs)
        if type(serializer) is serializers.ListSerializer:
            serializer.__class__ = RowListSerializer
        return serializer

    @property
    def fields(self) -> BindingDict:
        return self._row_fields().fields

    def _row_fields(self) -> _RowFields:
        if hasattr(self, "initial_data"):
            built = self.__dict__.get("_own_row_fields")
            if built is None:
                built = self._own_row_fields = _RowFields(self._build_fields(), self)
            return built
        built = _ROW_FIELDS.by_class.get(type(self))
        if built is None:
            built = _ROW_FIELDS.by_class[type(self)] = _RowFields(self._build_fields(), self)
        elif built.owner is not self:
            built.bind(self)
        return built

    def _build_fields(self) -> BindingDict:
        """DRF's `Serializer.fields`."""
        fields = BindingDict(self)
        for key, value in self.get_fields().items():
            fields[key] = value
        return fields

    def to_representation(self, instance):
        return self._row(instance, self._timezone())

    def _timezone(self):
        """The timezone its rows' datetimes are written in, if it writes any."""
        if self._planned().dates and settings.USE_TZ:
            return timezone.get_current_timezone()
        return None

    def _planned(self) -> _RowFields:
        built = self._row_fields()
        if built.plan is None:
            built.plan = self._build_row_plan()
            built.dates = any(step[4] for step in built.plan)
        return built

    def _row(self, instance, tz):
        """The row of `instance`, its datetimes written in `tz` (the current timezone)."""
        row = {}
        for name, field, attrs, represent, dated in self._planned().plan:
            if attrs is None:
                try:
                    value = field.get_attribute(instance)
                except SkipField:
                    continue
            else:
                value = instance
                try:
                    for attr in attrs:
                        mapping = _IS_MAPPING.get(type(value))
                        if mapping is None:
                            mapping = _IS_MAPPING[type(value)] = isinstance(value, Mapping)
                        value = value[attr] if mapping else getattr(value, attr)
                        if callable(value):
                            raise _Slow
                except Exception:
                    try:
                        value = field.get_attribute(instance)
                    except SkipField:
                        continue
            if value is None or (isinstance(value, PKOnlyObject) and value.pk is None):
                row[name] = None
            elif dated:
                row[name] = represent(value, tz)
            else:
                row[name] = represent(value)
        return row

    def _build_row_plan(self) -> list:
        plan = []
        for field in self._readable_fields:
            attrs = list(field.source_attrs) if _reads_plainly(field) else None
            with_tz = _iso_datetime(field) or _row_represent(field)
            if with_tz is not None:
                plan.append((field.field_name, field, attrs, with_tz, True))
            else:
                represent = _plain_represent(field) or field.to_representation
                plan.append((field.field_name, field, attrs, represent, False))
        return plan
