"""What list pages share: the page size a person asks for, and row links built without a
`reverse()` per row."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from django.urls import get_script_prefix, get_urlconf, reverse

_PLACEHOLDER = "0000000"  # digits: a placeholder every int and slug converter accepts


def page_size_from(request, *, default: int, maximum: int) -> int:
    """`?page_size=N` within 1..maximum; the default when absent or not a number."""
    try:
        size = int(request.GET.get("page_size", ""))
    except ValueError:
        return default
    return max(1, min(size, maximum))


def url_maker(view_name: str, *args) -> Callable[..., str]:
    """One `reverse()` for a whole list: `url_maker("tenants:dashboard", "slug")(t.slug)`.

    Each name in `args` becomes a placeholder in one reversed URL, replaced by each row's
    value: a list of 400 rows costs one URL resolution instead of 400 (each ~30 µs), and the
    pattern is kept per process (and URL configuration). Values must need no quoting (slugs
    and ids), as the URL converters that take them guarantee."""
    return _pattern(view_name, len(args), get_urlconf(), get_script_prefix()).format


@cache
def _pattern(view_name: str, count: int, urlconf, script_prefix: str) -> str:
    marks = [f"{_PLACEHOLDER}{i}" for i in range(count)]
    pattern = reverse(view_name, args=marks, urlconf=urlconf)
    for i, mark in enumerate(marks):
        pattern = pattern.replace(mark, f"{{{i}}}", 1)
    return pattern
