"""One way to show a count or an amount of money on every page: thousands separators, and
money with the portal's currency."""

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template
from django.conf import settings
from django.contrib.humanize.templatetags.humanize import intcomma

register = template.Library()


@register.filter
def money(value) -> str:
    """`Decimal("250000")` → "EUR 250,000.00"; anything that is not a number stays as it is."""
    try:
        amount = Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    except (InvalidOperation, TypeError, ValueError):
        return value
    return f"{settings.BILLING_CURRENCY} {intcomma(amount, use_l10n=False)}"
