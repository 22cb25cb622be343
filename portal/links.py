"""Links of list rows, reversed once per page rather than once per row."""

from collections.abc import Callable

from django.urls import reverse

# Digits, so that an <int:...> route takes it; long enough to be nowhere else in a URL.
_PLACEHOLDER = "80917345129834756201"


def url_for_each(viewname: str) -> Callable[[object], str]:
    """`reverse(viewname, args=[x])` for any x of a route with one integer argument: the URL
    is reversed once (a placeholder in place of the argument) and filled in per call."""
    pattern = reverse(viewname, args=[_PLACEHOLDER])
    return lambda value: pattern.replace(_PLACEHOLDER, str(int(value)))
