"""CSRF protection is on everywhere: no view opts out except DRF's (which check it themselves)."""

from django.urls import get_resolver
from django.urls.resolvers import URLResolver
from rest_framework.views import APIView


def _views(patterns, prefix=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _views(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern.callback


def test_no_view_is_csrf_exempt_except_drf_views():
    # DRF marks its views exempt and enforces CSRF in SessionAuthentication instead; token and
    # bearer requests carry no cookie, so they need none.
    exempt = {
        route
        for route, view in _views(get_resolver().url_patterns)
        if getattr(view, "csrf_exempt", False)
        and not issubclass(getattr(view, "cls", object), APIView)
    }
    # The catch-all JSON 404 under /api/ changes nothing: a POST to a wrong URL is told so,
    # not that its (absent) CSRF token failed.
    assert exempt == {"^api/(?P<path>.*)$"}


def test_csrf_middleware_is_installed(settings):
    assert "django.middleware.csrf.CsrfViewMiddleware" in settings.MIDDLEWARE
