"""CSRF protection is on everywhere: no view opts out except DRF's (which check it themselves)."""

from django.conf import settings
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
    # not that its (absent) CSRF token failed. The simulated fleet's stand-in for the inference
    # gateway (demo/gateway.py, mounted only with the simulated fleet) is called by API clients
    # with an endpoint key, never with the portal's session: a gateway has no CSRF.
    simulated_gateway = (f"^{settings.SIMULATED_GATEWAY_PATH}/(?P<hostname>[a-z0-9.-]+)"
                         "/(?P<path>.*)$")
    assert exempt - {simulated_gateway} == {"^api/(?P<path>.*)$"}


def test_csrf_middleware_is_installed(settings):
    assert "django.middleware.csrf.CsrfViewMiddleware" in settings.MIDDLEWARE
