"""How billing's pages print quantities, prices and units."""

import html
from decimal import Decimal, InvalidOperation

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma
from django.utils.safestring import SafeString, mark_safe

from inventory import resource_classes

register = template.Library()

_KIND_WORDS = {"gpu": "GPU", "mig": "GPU"}
_SCALAR_WORDS = {"cpu": "vCPU", "memory-gib": "GiB", "storage-gib": "GiB"}


@register.simple_tag
def select_options(choices, selected) -> SafeString:
    """The `<option>`s of a filter's select, the one equal to `selected` marked: one call for
    them all rather than a template loop per option (a fleet has thousands of tenants), each
    value and label escaped as the template would. Each choice is a (value, label) pair, or a
    value that is its own label."""
    options = []
    for choice in choices:
        value, label = choice if isinstance(choice, list | tuple) else (choice, choice)
        mark = " selected" if value == selected else ""
        options.append(f'<option value="{_escape(value)}"{mark}>{_escape(label)}</option>')
    return mark_safe("".join(options))  # noqa: S308 - every value and label escaped above


@register.filter
def grouped(value):
    """`Decimal("1234.50")` → "1,234.50", as humanize's `intcomma` writes it in English, without
    its look-up of the locale's format on every call (the usage explorer's rows call it twice
    each); anything but an int or a finite Decimal goes through `intcomma` itself."""
    if type(value) is int or (type(value) is Decimal and value.is_finite()):
        return f"{value:,}"
    return intcomma(value)


def _escape(value) -> str:
    # The standard library's escape, as Django's `escape` is (without its lazy wrapper).
    return html.escape(str(value))


@register.filter
def decimal_shown(value, min_places: int = 2) -> str:
    """Grouped, with up to the 6 places quantities and prices carry and at least `min_places`:
    2.500000 is 2.50, 1234.125 is 1,234.125, 47 (with 0) is 47."""
    if value in (None, ""):
        return ""
    try:
        number = Decimal(value)
    except (InvalidOperation, TypeError, ValueError):
        return str(value)
    whole, _, places = f"{number:,.6f}".partition(".")
    places = places.rstrip("0").ljust(int(min_places), "0")
    return f"{whole}.{places}" if places else whole


@register.filter
def unit_hours(resource: str, unit: str = "hour") -> str:
    """What a line's quantity counts: GPU-hours, vCPU-hours, GiB-months…"""
    try:
        kind = resource_classes.parse(resource).kind
    except resource_classes.UnknownResourceClass:
        kind = ""
    word = _SCALAR_WORDS.get(resource) or _KIND_WORDS.get(kind, "unit")
    return f"{word}-{unit}s"
