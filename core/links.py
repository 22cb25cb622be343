"""Links of list rows, reversed once per page rather than once per row."""

from django.urls import reverse

# Digits, so that an <int:...> route takes it; long enough to be nowhere else in a URL.
_PLACEHOLDER = "80917345129834756201"


def url_prefix(viewname: str) -> str:
    """What `reverse(viewname, args=[x])` writes before x, for a route ending `<int:x>/`: a
    template writes `{{ prefix }}{{ x }}/` per row."""
    pattern = reverse(viewname, args=[_PLACEHOLDER])
    prefix, _, rest = pattern.partition(_PLACEHOLDER)
    if rest != "/":
        raise ValueError(f"{viewname} does not end with its argument: {pattern}")
    return prefix
