"""Counts on the tenant pages, as humanize's `intcomma` writes them."""

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma

register = template.Library()


@register.filter
def grouped(value):
    """`12345` → "12,345" (humanize's `intcomma`, under the name the tenant pages use)."""
    return intcomma(value)
