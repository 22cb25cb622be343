"""Links of list rows, reversed once per page rather than once per row."""

from django.urls import reverse

# Digits, so that an <int:...> route takes it; long enough to be nowhere else in a URL.
_PLACEHOLDER = "80917345129834756201"


def url_around(viewname: str, *, current_app: str | None = None) -> tuple[str, str]:
    """What `reverse(viewname, args=[x])` writes before and after x, for a route with one
    argument that takes digits."""
    pattern = reverse(viewname, args=[_PLACEHOLDER], current_app=current_app)
    before, _, after = pattern.partition(_PLACEHOLDER)
    return before, after


def url_prefix(viewname: str) -> str:
    """What `reverse(viewname, args=[x])` writes before x, for a route ending `<int:x>/`: a
    template writes `{{ prefix }}{{ x }}/` per row."""
    prefix, after = url_around(viewname)
    if after != "/":
        raise ValueError(f"{viewname} does not end with its argument: {after!r} after it")
    return prefix
