"""How billing's pages print quantities, prices and units."""

from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma

from billing.calculations.invoicing import quantity_unit
from core.templatetags.portal_format import select_options

register = template.Library()



# The filter selects' options (one definition for every app's pages).
register.inclusion_tag("portal/_options.html")(select_options)


@register.filter
def grouped(value):
    """`Decimal("1234.50")` → "1,234.50", as humanize's `intcomma` writes it in English, without
    its look-up of the locale's format on every call (the usage explorer's rows call it twice
    each); anything but an int or a finite Decimal goes through `intcomma` itself."""
    if type(value) is int or (type(value) is Decimal and value.is_finite()):
        return f"{value:,}"
    return intcomma(value)


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
def quantity_shown(value) -> str:
    """A line's quantity as invoices show it: grouped, to two places (1,234.57). The line
    keeps its six places; the amount is computed from those, not from what is shown."""
    if value in (None, ""):
        return ""
    try:
        return f"{Decimal(value).quantize(Decimal('0.01'), ROUND_HALF_UP):,.2f}"
    except (InvalidOperation, TypeError, ValueError):
        return str(value)


@register.filter
def month_value(value) -> str:
    """A month filter's value as `<input type="month">` shows it (YYYY-MM): "2026-3" is
    2026-03; what is no month is left out (the filter's error says why)."""
    text = str(value or "").strip()
    try:
        month = datetime.strptime(text, "%Y-%m")
    except ValueError:
        return ""
    return f"{month.year:04d}-{month.month:02d}"


@register.filter
def unit_hours(resource: str, unit: str = "hour") -> str:
    """What a line's quantity counts: GPU-hours, MIG instance-hours, GiB-months…"""
    return quantity_unit(resource, unit)
