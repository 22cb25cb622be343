"""One way to show a count or an amount of money on every page: thousands separators, and
money with the portal's currency; and a filter select's options from one template."""

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


@register.inclusion_tag("portal/_options.html")
def select_options(choices, selected, skip_blank=False) -> dict:
    """The `<option>`s of a filter's select (templates/portal/_options.html), those chosen
    marked. Each choice is a (value, label) pair, or a value that is its own label.
    `selected`: the chosen value, or the chosen values of a multiple select (a list).
    `skip_blank`: leave out a choice of no value (the select writes its own "all" option)."""
    chosen = (
        frozenset(selected) if isinstance(selected, list | tuple | set | frozenset)
        else (selected,)
    )
    options = []
    for choice in choices:
        value, label = choice if isinstance(choice, list | tuple) else (choice, choice)
        if skip_blank and value in ("", None):
            continue
        options.append((value, label, value in chosen))
    return {"options": options}
